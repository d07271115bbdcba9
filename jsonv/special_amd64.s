//go:build !purego

#include "textflag.h"

// Escapes a string may hold as two bytes: \" \/ \\ \b \f \n \r \t, as
// bitmaps of their second byte: bits 0x00–0x3f, then 0x40–0x7f.
#define SIMPLE_LO $0x0000800400000000
#define SIMPLE_HI $0x0014404410000000

// func stringBody(b []byte) (n int, escaped bool)
//
// Scans a string's body (b starts after its opening quote) and returns the
// offset of the first byte Go has to judge: the closing quote, a control
// character, a backslash that does not start a two-byte escape (\u or a
// wrong one), or len(b). Two-byte escapes are stepped over here; escaped
// tells whether there was one. Sixteen bytes a step in SSE2, which every
// amd64 has: a mask of the quotes, backslashes and control characters of
// the block, whose set bits are taken in order; the last sixteen bytes of
// b one at a time.
TEXT ·stringBody(SB), NOSPLIT, $0-33
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), CX
	MOVQ SI, DI
	XORQ R8, R8
	MOVQ SIMPLE_LO, R9
	MOVQ SIMPLE_HI, R10

	MOVQ $0x2222222222222222, AX
	MOVQ AX, X1
	PUNPCKLQDQ X1, X1
	MOVQ $0x5c5c5c5c5c5c5c5c, AX
	MOVQ AX, X2
	PUNPCKLQDQ X2, X2
	MOVQ $0x1f1f1f1f1f1f1f1f, AX
	MOVQ AX, X3
	PUNPCKLQDQ X3, X3

block:
	CMPQ CX, $16
	JB   tail
	MOVOU (SI), X4
	MOVOU X4, X5
	PCMPEQB X1, X5
	MOVOU X4, X6
	PCMPEQB X2, X6
	MOVOU X4, X7
	PMINUB X3, X7
	PCMPEQB X4, X7
	POR X6, X5
	POR X7, X5
	PMOVMSKB X5, AX

bits:
	TESTQ AX, AX
	JNZ  special
	ADDQ $16, SI
	SUBQ $16, CX
	JMP  block

special:
	BSFQ AX, BX
	MOVBLZX (SI)(BX*1), DX
	CMPB DL, $0x5c
	JNE  stopAt
	// A backslash at SI+BX: is the next byte in b, and a two-byte escape?
	LEAQ 1(BX), DX
	CMPQ DX, CX
	JAE  stopAt
	MOVBLZX 1(SI)(BX*1), DX
	CMPQ DX, $64
	JAE  hiEsc
	BTQ  DX, R9
	JCC  stopAt
	JMP  stepEsc
hiEsc:
	SUBQ $64, DX
	CMPQ DX, $64
	JAE  stopAt
	BTQ  DX, R10
	JCC  stopAt
stepEsc:
	MOVQ $1, R8
	// Drop the backslash and the byte it escapes from the mask.
	LEAQ -1(AX), DX
	ANDQ DX, AX
	INCQ BX
	BTRQ BX, AX
	CMPQ BX, $16
	JB   bits
	// The escaped byte was the first of the next block: start after it.
	ADDQ $17, SI
	SUBQ $17, CX
	JMP  block

stopAt:
	ADDQ BX, SI
	JMP  done

tail:
	TESTQ CX, CX
	JZ   done
	MOVBLZX (SI), DX
	CMPB DL, $0x22
	JEQ  done
	CMPB DL, $0x20
	JB   done
	CMPB DL, $0x5c
	JNE  plain
	CMPQ CX, $2
	JB   done
	MOVBLZX 1(SI), DX
	CMPQ DX, $64
	JAE  tailHi
	BTQ  DX, R9
	JCC  done
	JMP  tailEsc
tailHi:
	SUBQ $64, DX
	CMPQ DX, $64
	JAE  done
	BTQ  DX, R10
	JCC  done
tailEsc:
	MOVQ $1, R8
	ADDQ $2, SI
	SUBQ $2, CX
	JMP  tail
plain:
	INCQ SI
	DECQ CX
	JMP  tail

done:
	SUBQ DI, SI
	MOVQ SI, n+24(FP)
	MOVB R8, escaped+32(FP)
	RET

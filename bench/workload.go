package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/core"
)

// The synthetic workload: N Claude Code sessions, each a parentUuid chain of
// turns (a user prompt, one to four assistant tool_use rows each answered by
// a tool_result user row carrying a few KB of output, a final assistant
// reply), with the occasional custom-title / last-prompt metadata line. Keys
// are in Claude Code's order. The sessions are interleaved in round-robin
// chunks of 1-6 lines, as a host running several sessions at once would
// submit them. The same seed gives the same bytes.

const (
	claudeVersion = "2.1.332"
	tsLayout      = "2006-01-02T15:04:05.000Z"
)

var projects = []string{"shop", "billing-api", "infra", "mobile-app", "docs-site", "ml-pipeline", "auth-service"}

var branches = []string{"main", "feature/checkout", "fix/login-timeout", "chore/deps", "refactor/payments"}

var vocabulary = strings.Fields(`the a to of and in is it that for on with as this be are was
	function handler request response error value config test build deploy cache token user session
	file line module package import export return const let type interface struct method field query
	index database migration schema table column row transaction retry timeout context cancel channel
	goroutine mutex lock queue worker pool buffer stream reader writer parse encode decode json yaml
	should could would check verify update refactor rename extract inline move delete add fix bug issue
	failing passing flaky slow fast memory leak allocation profile benchmark latency throughput p99 median
	auth login logout password hash bcrypt compare constant-time header cookie jwt refresh expiry clock
	café naïve résumé → ✓ — «quoted» 日本語 ok`)

var identifiers = strings.Fields(`loginHandler verifyPassword sessionStore refreshToken parseConfig
	buildIndex runMigration retryWithBackoff newWorkerPool drainQueue encodeEntry decodeEntry
	checkoutCart applyDiscount chargeCard sendReceipt fetchUser updateProfile deleteAccount`)

var paths = strings.Fields(`src/auth/login.ts src/auth/session.ts src/api/handlers.go src/api/router.go
	internal/store/pg.go internal/store/cache.go pkg/billing/invoice.py pkg/billing/tax.py
	web/components/Checkout.tsx web/components/Cart.tsx scripts/deploy.sh Makefile README.md
	migrations/0042_add_index.sql test/auth.test.ts test/billing_test.py`)

// outputPool holds lines of tool output of the usual kinds (test runners,
// compilers, listings, diffs, logs, source), escapes included.
var outputPool = func() []string {
	r := rand.New(rand.NewPCG(42, 42))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	var pool []string
	for i := 0; i < 600; i++ {
		var l string
		switch i % 12 {
		case 0:
			l = fmt.Sprintf("%s:%d:%d: error: %s %s %s", pick(paths), r.IntN(900)+1, r.IntN(80)+1, pick(vocabulary), pick(vocabulary), pick(vocabulary))
		case 1:
			l = fmt.Sprintf("  ✓ %s %s %s (%d ms)", pick(identifiers), pick(vocabulary), pick(vocabulary), r.IntN(400))
		case 2:
			l = fmt.Sprintf("  ✗ %s — expected \"%s\" but got \"%s\"", pick(identifiers), pick(vocabulary), pick(vocabulary))
		case 3:
			l = fmt.Sprintf("\tat %s (%s:%d:%d)", pick(identifiers), pick(paths), r.IntN(900)+1, r.IntN(80)+1)
		case 4:
			l = fmt.Sprintf("-rw-r--r--  1 dev dev %7d Jan 10 11:%02d %s", r.IntN(90000), r.IntN(60), pick(paths))
		case 5:
			l = fmt.Sprintf("+\t%s, err := %s(ctx, %s)", pick(vocabulary), pick(identifiers), pick(vocabulary))
		case 6:
			l = fmt.Sprintf("-\t%s := %s(%s)", pick(vocabulary), pick(identifiers), pick(vocabulary))
		case 7:
			l = fmt.Sprintf(`{"level":"info","msg":"%s %s","latency_ms":%d,"path":"/api/%s"}`, pick(vocabulary), pick(vocabulary), r.IntN(900), pick(vocabulary))
		case 8:
			l = fmt.Sprintf("func %s(ctx context.Context, id string) (*%s, error) {", pick(identifiers), "Result")
		case 9:
			l = fmt.Sprintf("    if err != nil { return nil, fmt.Errorf(\"%s: %%w\", err) }", pick(identifiers))
		case 10:
			l = fmt.Sprintf("PASS  %s (%d.%03d s)", pick(paths), r.IntN(9), r.IntN(1000))
		default:
			l = fmt.Sprintf("%6d\t%s %s %s %s", r.IntN(2000), pick(vocabulary), pick(vocabulary), pick(identifiers), pick(vocabulary))
		}
		pool = append(pool, l)
	}
	return pool
}()

// genSession is one session's generator.
type genSession struct {
	r       *rand.Rand
	id      string
	cwd     string
	branch  string
	parent  string // "" is null: the chain starts
	ts      time.Time
	turns   int
	queue   [][]byte
	prompt  string
	lastID  string
	msgSeq  int
	buf     []byte
	titleNo int
}

func newGenSession(seed uint64, i int) *genSession {
	r := rand.New(rand.NewPCG(seed, uint64(i)+1))
	s := &genSession{r: r}
	s.id = s.uuid()
	s.cwd = "/home/dev/src/" + projects[i%len(projects)]
	s.branch = branches[r.IntN(len(branches))]
	s.ts = time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Minute)
	return s
}

func (s *genSession) uuid() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := s.r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (s *genSession) alnum(n int) string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[s.r.IntN(len(chars))]
	}
	return string(b)
}

// prose returns sentences of vocabulary words, about n bytes.
func (s *genSession) prose(n int) string {
	var sb strings.Builder
	start := true
	for sb.Len() < n {
		w := vocabulary[s.r.IntN(len(vocabulary))]
		if s.r.IntN(12) == 0 {
			w = "`" + identifiers[s.r.IntN(len(identifiers))] + "`"
		}
		if start {
			if c := w[0]; c >= 'a' && c <= 'z' {
				w = string(c-'a'+'A') + w[1:]
			}
			start = false
		} else {
			sb.WriteByte(' ')
		}
		sb.WriteString(w)
		if s.r.IntN(14) == 0 {
			sb.WriteString(".")
			start = true
			if s.r.IntN(4) == 0 {
				sb.WriteString("\n\n")
			}
		}
	}
	sb.WriteByte('.')
	return sb.String()
}

// output returns tool output lines, about n bytes.
func (s *genSession) output(n int) string {
	var sb strings.Builder
	for sb.Len() < n {
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(outputPool[s.r.IntN(len(outputPool))])
	}
	return sb.String()
}

func (s *genSession) tick() string {
	s.ts = s.ts.Add(time.Duration(500+s.r.IntN(30000)) * time.Millisecond)
	return s.ts.Format(tsLayout)
}

// head writes the keys every chain row starts with.
func (s *genSession) head() {
	s.buf = append(s.buf[:0], `{"parentUuid":`...)
	if s.parent == "" {
		s.buf = append(s.buf, "null"...)
	} else {
		s.buf = core.AppendJSString(s.buf, s.parent)
	}
	s.buf = append(s.buf, `,"isSidechain":false`...)
}

// tail writes the keys every chain row ends with and queues the line.
func (s *genSession) tail(uuid string) {
	s.buf = append(s.buf, `,"userType":"external","entrypoint":"cli","cwd":`...)
	s.buf = core.AppendJSString(s.buf, s.cwd)
	s.buf = append(s.buf, `,"sessionId":`...)
	s.buf = core.AppendJSString(s.buf, s.id)
	s.buf = append(s.buf, `,"version":"`+claudeVersion+`","gitBranch":`...)
	s.buf = core.AppendJSString(s.buf, s.branch)
	s.buf = append(s.buf, '}')
	s.queue = append(s.queue, append([]byte(nil), s.buf...))
	s.parent = uuid
	s.lastID = uuid
}

func (s *genSession) uuidTS(uuid string) {
	s.buf = append(s.buf, `,"uuid":`...)
	s.buf = core.AppendJSString(s.buf, uuid)
	s.buf = append(s.buf, `,"timestamp":`...)
	s.buf = core.AppendJSString(s.buf, s.tick())
}

func (s *genSession) userPrompt() {
	s.prompt = s.prose(40 + s.r.IntN(760))
	uuid := s.uuid()
	s.head()
	s.buf = append(s.buf, `,"promptId":`...)
	s.buf = core.AppendJSString(s.buf, s.uuid())
	s.buf = append(s.buf, `,"type":"user","message":{"role":"user","content":`...)
	s.buf = core.AppendJSString(s.buf, s.prompt)
	s.buf = append(s.buf, '}')
	s.uuidTS(uuid)
	s.tail(uuid)
}

func (s *genSession) assistantStart() {
	s.msgSeq++
	s.buf = append(s.buf, `,"message":{"model":"claude-sonnet-4-5","id":"msg_01`...)
	s.buf = append(s.buf, s.alnum(22)...)
	s.buf = append(s.buf, `","type":"message","role":"assistant","content":[{"type":"text","text":`...)
}

func (s *genSession) assistantEnd(stop string, uuid string) {
	s.buf = append(s.buf, `],"stop_reason":"`+stop+`","stop_sequence":null,"usage":{"input_tokens":`...)
	s.buf = fmt.Appendf(s.buf, `%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d`,
		1+s.r.IntN(40), s.r.IntN(9000), s.r.IntN(90000), 10+s.r.IntN(2000))
	s.buf = append(s.buf, `,"service_tier":"standard"}},"requestId":"req_011`...)
	s.buf = append(s.buf, s.alnum(21)...)
	s.buf = append(s.buf, `","type":"assistant"`...)
	s.uuidTS(uuid)
	s.tail(uuid)
}

// toolRound queues an assistant tool_use row and its tool_result row.
func (s *genSession) toolRound() {
	asst := s.uuid()
	toolID := "toolu_01" + s.alnum(22)
	tools := []string{"Bash", "Read", "Edit", "Grep"}
	tool := tools[s.r.IntN(len(tools))]
	path := paths[s.r.IntN(len(paths))]

	s.head()
	s.assistantStart()
	s.buf = core.AppendJSString(s.buf, s.prose(40+s.r.IntN(360)))
	s.buf = append(s.buf, `},{"type":"tool_use","id":`...)
	s.buf = core.AppendJSString(s.buf, toolID)
	s.buf = append(s.buf, `,"name":"`+tool+`","input":{`...)
	switch tool {
	case "Bash":
		s.buf = append(s.buf, `"command":`...)
		s.buf = core.AppendJSString(s.buf, "cd /home/dev/src && npm test -- "+path+" 2>&1 | tail -n 80")
		s.buf = append(s.buf, `,"description":"Run the tests"`...)
	case "Read":
		s.buf = append(s.buf, `"file_path":`...)
		s.buf = core.AppendJSString(s.buf, s.cwd+"/"+path)
	case "Edit":
		s.buf = append(s.buf, `"file_path":`...)
		s.buf = core.AppendJSString(s.buf, s.cwd+"/"+path)
		s.buf = append(s.buf, `,"old_string":`...)
		s.buf = core.AppendJSString(s.buf, s.output(80+s.r.IntN(300)))
		s.buf = append(s.buf, `,"new_string":`...)
		s.buf = core.AppendJSString(s.buf, s.output(80+s.r.IntN(300)))
	case "Grep":
		s.buf = append(s.buf, `"pattern":`...)
		s.buf = core.AppendJSString(s.buf, identifiers[s.r.IntN(len(identifiers))]+`\(`)
		s.buf = append(s.buf, `,"path":`...)
		s.buf = core.AppendJSString(s.buf, s.cwd)
	}
	s.buf = append(s.buf, "}}"...)
	s.assistantEnd("tool_use", asst)

	out := s.output(512 + s.r.IntN(3584))
	res := s.uuid()
	s.head()
	s.buf = append(s.buf, `,"type":"user","message":{"role":"user","content":[{"tool_use_id":`...)
	s.buf = core.AppendJSString(s.buf, toolID)
	s.buf = append(s.buf, `,"type":"tool_result","content":`...)
	s.buf = core.AppendJSString(s.buf, out)
	s.buf = append(s.buf, `,"is_error":false}]}`...)
	s.uuidTS(res)
	s.buf = append(s.buf, `,"toolUseResult":`...)
	if tool == "Read" {
		s.buf = append(s.buf, `{"type":"text","file":{"filePath":`...)
		s.buf = core.AppendJSString(s.buf, s.cwd+"/"+path)
		s.buf = append(s.buf, `,"content":`...)
		s.buf = core.AppendJSString(s.buf, out)
		n := strings.Count(out, "\n") + 1
		s.buf = fmt.Appendf(s.buf, `,"numLines":%d,"startLine":1,"totalLines":%d}}`, n, n+s.r.IntN(400))
	} else {
		s.buf = append(s.buf, `{"stdout":`...)
		s.buf = core.AppendJSString(s.buf, out)
		s.buf = append(s.buf, `,"stderr":"","interrupted":false,"isImage":false}`...)
	}
	s.buf = append(s.buf, `,"sourceToolAssistantUUID":`...)
	s.buf = core.AppendJSString(s.buf, asst)
	s.tail(res)
}

func (s *genSession) finalReply() {
	uuid := s.uuid()
	s.head()
	s.assistantStart()
	s.buf = core.AppendJSString(s.buf, s.prose(100+s.r.IntN(1400)))
	s.buf = append(s.buf, '}')
	s.assistantEnd("end_turn", uuid)
}

func (s *genSession) meta(typ, key, val string, leaf bool) {
	s.buf = append(s.buf[:0], `{"type":"`+typ+`","`+key+`":`...)
	s.buf = core.AppendJSString(s.buf, val)
	if leaf {
		s.buf = append(s.buf, `,"leafUuid":`...)
		s.buf = core.AppendJSString(s.buf, s.lastID)
	}
	s.buf = append(s.buf, `,"sessionId":`...)
	s.buf = core.AppendJSString(s.buf, s.id)
	s.buf = append(s.buf, '}')
	s.queue = append(s.queue, append([]byte(nil), s.buf...))
}

func (s *genSession) turn() {
	s.turns++
	s.userPrompt()
	for n := 1 + s.r.IntN(4); n > 0; n-- {
		s.toolRound()
	}
	s.finalReply()
	if s.turns == 1 || s.r.IntN(20) == 0 {
		s.titleNo++
		s.meta("custom-title", "customTitle", fmt.Sprintf("%s %s (%d)", vocabulary[s.r.IntN(len(vocabulary))], identifiers[s.r.IntN(len(identifiers))], s.titleNo), false)
	}
	if s.r.IntN(3) == 0 {
		p := s.prompt
		if len(p) > 200 {
			p = strings.ToValidUTF8(p[:200], "")
		}
		s.meta("last-prompt", "lastPrompt", p, true)
	}
}

// next returns the session's next line.
func (s *genSession) next() []byte {
	if len(s.queue) == 0 {
		s.turn()
	}
	l := s.queue[0]
	s.queue = s.queue[1:]
	return l
}

// generate writes about size bytes of interleaved sessions to path.
func generate(path string, sessions int, size int64, seed uint64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	gs := make([]*genSession, sessions)
	for i := range gs {
		gs[i] = newGenSession(seed, i)
	}
	r := rand.New(rand.NewPCG(seed, 0))
	var total int64
	for total < size {
		for _, s := range gs {
			for n := 1 + r.IntN(6); n > 0 && total < size; n-- {
				l := s.next()
				w.Write(l)
				w.WriteByte('\n')
				total += int64(len(l)) + 1
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

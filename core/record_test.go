package core

import "testing"

func TestNameUUID(t *testing.T) {
	if a, b := nameUUID("x"), nameUUID("x"); a != b || a[14] != '5' || a == nameUUID("y") {
		t.Errorf("nameUUID: %q %q", a, b)
	}
}

func TestJSONObject(t *testing.T) {
	var o jsonObject
	if got := string(o.bytes()); got != "{}" {
		t.Errorf("empty object: %s", got)
	}
	o.str("a", "<\u2028>")
	o.boolean("b", true)
	o.boolean("c", false)
	o.raw("d", []byte("[1]"))
	if got, want := string(o.bytes()), "{\"a\":\"<\u2028>\",\"b\":true,\"c\":false,\"d\":[1]}"; got != want {
		t.Errorf("object: %s, want %s", got, want)
	}
}

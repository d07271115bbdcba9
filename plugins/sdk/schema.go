package sdk

import (
	"encoding/json"
	"reflect"
	"strings"
)

// Schema derives a JSON Schema (draft 2020-12) from a configuration value:
// a struct (or pointer to one) whose fields carry json tags. Non-zero
// field values become defaults, and a field's `doc:"..."` tag its
// description:
//
//	type Config struct {
//		URL     string   `json:"url" doc:"where batches are posted"`
//		Retries int      `json:"retries" doc:"attempts after the first"`
//		Headers map[string]string `json:"headers"`
//	}
//
// A nil v gives a schema that accepts any object.
func Schema(v any) json.RawMessage {
	s := map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema"}
	if v == nil {
		s["type"] = "object"
	} else {
		for k, x := range schemaOf(reflect.ValueOf(v), reflect.TypeOf(v), 0) {
			s[k] = x
		}
	}
	b, _ := json.Marshal(s)
	return b
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

func schemaOf(v reflect.Value, t reflect.Type, depth int) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if v.IsValid() {
			if v.IsNil() {
				v = reflect.Value{}
			} else {
				v = v.Elem()
			}
		}
	}
	if depth > 8 || t == rawMessage {
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaOf(reflect.Value{}, t.Elem(), depth+1)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(reflect.Value{}, t.Elem(), depth+1)}
	case reflect.Struct:
		props := map[string]any{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			var fv reflect.Value
			if v.IsValid() {
				fv = v.Field(i)
			}
			p := schemaOf(fv, f.Type, depth+1)
			if doc := f.Tag.Get("doc"); doc != "" {
				p["description"] = doc
			}
			if fv.IsValid() && !fv.IsZero() {
				p["default"] = fv.Interface()
			}
			props[name] = p
		}
		return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	}
	return map[string]any{}
}

// Package redacttest makes a secret corpus for tests: credentials of many
// kinds, generated (never real, never stored in the repository), embedded
// in realistic tool outputs inside Claude Code transcripts.
package redacttest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Secret is one generated credential.
type Secret struct {
	// Kind names the credential's format ("aws-access-key-id", ...).
	Kind string
	// Rule is the built-in rule expected to find it.
	Rule string
	// Value is the secret itself: no file scribe writes may hold it.
	Value string
	// Text is how it appears in tool output (a line of .env, a config
	// file, a curl command), holding Value.
	Text string
}

const (
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lowerc = "abcdefghijklmnopqrstuvwxyz"
	digits = "0123456789"
	alnum  = upper + lowerc + digits
	hexd   = "0123456789abcdef"
	b32    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b64    = alnum + "+/"
	urlb64 = alnum + "-_"
)

type gen struct{ r *rand.Rand }

func (g gen) s(n int, alphabet string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	// Every generated body holds a digit and a letter, as real keys do.
	var own []byte
	for i := 0; i < len(alphabet); i++ {
		if alphabet[i] >= '0' && alphabet[i] <= '9' {
			own = append(own, alphabet[i])
		}
	}
	if n >= 8 && len(own) > 0 {
		b[n/2] = own[g.r.IntN(len(own))]
	}
	return string(b)
}

func (g gen) pem(kind string) string {
	var body strings.Builder
	for range 12 {
		body.WriteString(g.s(64, b64))
		body.WriteByte('\n')
	}
	return "-----BEGIN " + kind + "-----\n" + body.String() + "-----END " + kind + "-----"
}

// Secrets returns the corpus's credentials, the same for the same seed:
// 45 credentials, each of its own kind, found by 38 built-in rules
// (database URLs, private keys, .env values and Authorization headers
// share theirs).
func Secrets(seed uint64) []Secret {
	g := gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	var out []Secret
	add := func(kind, rule, value, text string) {
		out = append(out, Secret{Kind: kind, Rule: rule, Value: value, Text: text})
	}
	v := "AKIA" + g.s(16, b32)
	add("aws-access-key-id", "aws-access-key-id", v, "aws_access_key_id = "+v)
	v = g.s(40, b64)
	add("aws-secret-access-key", "aws-secret-access-key", v, "aws_secret_access_key = "+v)
	v = "AIza" + g.s(35, urlb64)
	add("gcp-api-key", "gcp-api-key", v, "GOOGLE_API_KEY="+v)
	v = g.s(40, hexd)
	add("gcp-service-account-key-id", "gcp-service-account-key-id", v, `{"type": "service_account", "project_id": "shop-prod", "private_key_id": "`+v+`", "client_email": "ci@shop-prod.iam.gserviceaccount.com"}`)
	v = "GOCSPX-" + g.s(28, urlb64)
	add("google-oauth-client-secret", "google-oauth-client-secret", v, `"client_secret": "`+v+`"`)
	v = "ya29." + g.s(60, urlb64)
	add("google-oauth-access-token", "google-oauth-access-token", v, "access_token: "+v)
	v = g.s(86, b64) + "=="
	add("azure-storage-account-key", "azure-storage-account-key", v, "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=shopassets;AccountKey="+v+";EndpointSuffix=core.windows.net")
	v = g.s(3, alnum) + "8Q~" + g.s(34, alnum+"_-.")
	add("azure-ad-client-secret", "azure-ad-client-secret", v, "AZURE_CLIENT_SECRET="+v)
	v = g.s(43, alnum+"%") + "%3D"
	add("azure-sas-token", "azure-sas-signature", v, "https://shopassets.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-12-01T00:00:00Z&sig="+v)
	v = "ghp_" + g.s(36, alnum)
	add("github-pat", "github-pat", v, "GITHUB_TOKEN="+v)
	v = "gho_" + g.s(36, alnum)
	add("github-oauth-token", "github-oauth-token", v, "    oauth_token: "+v)
	v = "github_pat_" + g.s(82, alnum+"_")
	add("github-fine-grained-pat", "github-fine-grained-pat", v, "export GH_TOKEN="+v)
	v = "glpat-" + g.s(20, alnum+"_-")
	add("gitlab-pat", "gitlab-pat", v, "CI_JOB_TOKEN="+v)
	v = "glrt-" + g.s(20, alnum)
	add("gitlab-runner-token", "gitlab-runner-token", v, `  token = "`+v+`"`)
	v = "xoxb-" + g.s(12, digits) + "-" + g.s(13, digits) + "-" + g.s(24, alnum)
	add("slack-bot-token", "slack-token", v, "SLACK_BOT_TOKEN="+v)
	v = "https://hooks.slack.com/services/T" + g.s(8, upper+digits) + "/B" + g.s(8, upper+digits) + "/" + g.s(24, alnum)
	add("slack-webhook-url", "slack-webhook-url", v, "SLACK_WEBHOOK="+v)
	v = "sk_live_" + g.s(24, alnum)
	add("stripe-secret-key", "stripe-secret-key", v, "STRIPE_SECRET_KEY="+v)
	v = "whsec_" + g.s(32, alnum)
	add("stripe-webhook-secret", "stripe-webhook-secret", v, "STRIPE_WEBHOOK_SECRET="+v)
	v = "SK" + g.s(32, hexd)
	add("twilio-api-key", "twilio-api-key", v, "TWILIO_API_KEY="+v)
	v = g.s(32, hexd)
	add("twilio-auth-token", "twilio-auth-token", v, "TWILIO_AUTH_TOKEN="+v)
	v = "sk-proj-" + g.s(20, alnum) + "T3BlbkFJ" + g.s(20, alnum)
	add("openai-api-key", "openai-api-key", v, "OPENAI_API_KEY="+v)
	v = "sk-ant-api03-" + g.s(93, urlb64) + "AA"
	add("anthropic-api-key", "anthropic-api-key", v, "ANTHROPIC_API_KEY="+v)
	v = jwt(g)
	add("jwt", "jwt", v, "id_token="+v)
	v = g.pem("RSA PRIVATE KEY")
	add("pem-rsa-private-key", "private-key", v, v)
	v = g.pem("OPENSSH PRIVATE KEY")
	add("openssh-private-key", "private-key", v, v)
	v = g.pem("EC PRIVATE KEY")
	add("pem-ec-private-key", "private-key", v, v)
	v = g.s(18, alnum)
	add("postgres-url-password", "database-url-password", v, "DATABASE_URL=postgres://shop_admin:"+v+"@db.internal:5432/shop?sslmode=require")
	v = g.s(16, alnum)
	add("mongodb-url-password", "database-url-password", v, `MONGO_URI="mongodb+srv://app:`+v+`@cluster0.x1y2z.mongodb.net/prod"`)
	v = g.s(20, alnum)
	add("redis-url-password", "database-url-password", v, "REDIS_URL=redis://default:"+v+"@cache.internal:6379/0")
	v = g.s(14, alnum)
	add("mysql-url-password", "database-url-password", v, "mysql://root:"+v+"@127.0.0.1:3306/wordpress")
	v = g.s(24, alnum)
	add("dotenv-password", "generic-secret-assignment", v, "DB_PASSWORD="+v)
	v = g.s(64, hexd)
	add("dotenv-secret-key-base", "generic-secret-assignment", v, "SECRET_KEY_BASE="+v)
	v = g.s(40, alnum)
	add("authorization-bearer", "authorization-header", v, `curl -s -H "Authorization: Bearer `+v+`" https://api.shop.example/v1/orders`)
	v = base64.StdEncoding.EncodeToString([]byte("deploy:" + g.s(16, alnum)))
	add("authorization-basic", "authorization-header", v, "Authorization: Basic "+v)
	v = "npm_" + g.s(36, alnum)
	add("npm-token", "npm-token", v, "//registry.npmjs.org/:_authToken="+v)
	v = "SG." + g.s(22, urlb64) + "." + g.s(43, urlb64)
	add("sendgrid-api-key", "sendgrid-api-key", v, "SENDGRID_API_KEY="+v)
	v = "dop_v1_" + g.s(64, hexd)
	add("digitalocean-token", "digitalocean-token", v, "DIGITALOCEAN_TOKEN="+v)
	v = "hf_" + g.s(34, upper+lowerc)
	add("huggingface-token", "huggingface-token", v, "HF_TOKEN="+v)
	v = "dapi" + g.s(32, hexd)
	add("databricks-token", "databricks-token", v, "DATABRICKS_TOKEN="+v)
	v = g.s(9, "123456789") + ":AA" + g.s(33, urlb64)
	add("telegram-bot-token", "telegram-bot-token", v, "TELEGRAM_BOT_TOKEN="+v)
	v = "shpat_" + g.s(32, hexd)
	add("shopify-token", "shopify-token", v, "SHOPIFY_ACCESS_TOKEN="+v)
	v = "AGE-SECRET-KEY-1" + g.s(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
	add("age-secret-key", "age-secret-key", v, "# created: 2026-11-02\n"+v)
	v = "pypi-AgEIcHlwaS5vcmc" + g.s(60, urlb64)
	add("pypi-token", "pypi-token", v, "password = "+v)
	v = "hvs." + g.s(95, urlb64)
	add("vault-token", "vault-token", v, "VAULT_TOKEN="+v)
	v = "lin_api_" + g.s(40, alnum)
	add("linear-api-key", "linear-api-key", v, "LINEAR_API_KEY="+v)
	return out
}

func jwt(g gen) string {
	enc := base64.RawURLEncoding
	h := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	p := enc.EncodeToString([]byte(fmt.Sprintf(`{"sub":"%s","name":"Ada","iat":1764000000}`, g.s(12, digits))))
	return h + "." + p + "." + g.s(43, urlb64)
}

// Kinds returns the distinct kinds in secrets.
func Kinds(secrets []Secret) map[string]bool {
	k := map[string]bool{}
	for _, s := range secrets {
		k[s.Kind] = true
	}
	return k
}

// Transcript returns a Claude Code session (one JSON object per line, in
// Claude Code's key order) that carries every secret in tool outputs: a
// `cat .env` Bash result (in the message and in toolUseResult.stdout), a
// Read of a config file (toolUseResult.file.content), a command in a
// tool_use input, stderr of a failed command, an attachment, and the
// assistant quoting one in its text. The lines are chained by parentUuid.
func Transcript(sessionID, cwd string, secrets []Secret) []byte {
	t := &transcript{sid: sessionID, cwd: cwd}
	t.user(map[string]any{"role": "user", "content": "The deploy is failing, can you check the environment?"}, nil)
	for i, s := range secrets {
		toolID := fmt.Sprintf("toolu_%02d%s", i, strings.Repeat("x", 20))
		switch i % 5 {
		case 0: // cat .env
			cmd := "cat .env"
			out := "# production\nNODE_ENV=production\n" + s.Text + "\nLOG_LEVEL=info\n"
			t.toolUse(toolID, "Bash", map[string]any{"command": cmd, "description": "Show the environment file"})
			t.toolResult(toolID, out, map[string]any{"stdout": out, "stderr": "", "interrupted": false, "isImage": false})
		case 1: // Read a config file
			path := cwd + "/config/settings.yml"
			content := "server:\n  port: 8080\nsecrets:\n  " + strings.ReplaceAll(s.Text, "\n", "\n  ") + "\n"
			t.toolUse(toolID, "Read", map[string]any{"file_path": path})
			t.toolResult(toolID, numbered(content), map[string]any{"type": "text", "file": map[string]any{
				"filePath": path, "content": content, "numLines": strings.Count(content, "\n"), "startLine": 1, "totalLines": strings.Count(content, "\n")}})
		case 2: // the secret in a command the agent ran, failing on stderr
			cmd := "echo '" + s.Text + "' >> ~/.profile && ./deploy.sh"
			errOut := "deploy.sh: line 12: refused credential " + s.Value + "\n"
			t.toolUse(toolID, "Bash", map[string]any{"command": cmd, "description": "Save the credential and deploy"})
			t.toolResult(toolID, "Exit code 1\n"+errOut, map[string]any{"stdout": "", "stderr": errOut, "interrupted": false, "isImage": false})
		case 3: // printenv
			out := "HOME=/home/ada\nPATH=/usr/bin:/bin\n" + s.Text + "\nTERM=xterm-256color\n"
			t.toolUse(toolID, "Bash", map[string]any{"command": "printenv", "description": "List variables"})
			t.toolResult(toolID, out, map[string]any{"stdout": out, "stderr": "", "interrupted": false, "isImage": false})
			t.attachment(s.Text)
		case 4: // found by grep, then the assistant repeats the bare value
			out := "src/config.ts:12:  " + strings.ReplaceAll(s.Text, "\n", "\n  ") + "\n"
			t.toolUse(toolID, "Grep", map[string]any{"pattern": "KEY|TOKEN|SECRET", "output_mode": "content"})
			t.toolResult(toolID, out, map[string]any{"mode": "content", "numFiles": 1, "filenames": []string{}, "content": out, "numLines": 1})
			t.assistantText("I found the credential in use: `" + s.Value + "`. It should be rotated.")
		}
	}
	t.assistantText("Done: every credential above should be rotated.")
	return t.buf.Bytes()
}

func numbered(content string) string {
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		fmt.Fprintf(&b, "%6d\u2192%s\n", i+1, l)
	}
	return b.String()
}

type transcript struct {
	sid, cwd string
	n        int
	parent   string
	buf      bytes.Buffer
}

func (t *transcript) uuid() string {
	t.n++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", t.n, t.n)
}

// line writes one entry: the envelope in Claude Code's order around the
// type's own fields.
func (t *transcript) line(typ string, fields [][2]any) {
	id := t.uuid()
	var b bytes.Buffer
	b.WriteByte('{')
	var parent any
	if t.parent != "" {
		parent = t.parent
	}
	kv := [][2]any{{"parentUuid", parent}, {"isSidechain", false}, {"userType", "external"}, {"cwd", t.cwd},
		{"sessionId", t.sid}, {"version", "2.0.14"}, {"gitBranch", "main"}, {"type", typ}}
	kv = append(kv, fields...)
	kv = append(kv, [2]any{"uuid", id}, [2]any{"timestamp", fmt.Sprintf("2026-11-02T10:%02d:%02d.000Z", t.n/60%60, t.n%60)})
	for i, p := range kv {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p[0])
		b.Write(k)
		b.WriteByte(':')
		b.Write(marshal(p[1]))
	}
	b.WriteString("}\n")
	t.buf.Write(b.Bytes())
	t.parent = id
}

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func (t *transcript) user(msg map[string]any, result map[string]any) {
	f := [][2]any{{"message", msg}}
	if result != nil {
		f = append(f, [2]any{"toolUseResult", result})
	}
	t.line("user", f)
}

func (t *transcript) assistant(content []any) {
	t.line("assistant", [][2]any{{"message", map[string]any{"id": fmt.Sprintf("msg_%024d", t.n), "type": "message", "role": "assistant",
		"model": "claude-sonnet-4-5", "content": content, "stop_reason": nil,
		"usage": map[string]any{"input_tokens": 1200, "output_tokens": 85, "cache_read_input_tokens": 20480}}}, {"requestId", fmt.Sprintf("req_%020d", t.n)}})
}

func (t *transcript) toolUse(id, name string, input map[string]any) {
	t.assistant([]any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}})
}

func (t *transcript) toolResult(id, content string, result map[string]any) {
	t.user(map[string]any{"role": "user", "content": []any{map[string]any{"tool_use_id": id, "type": "tool_result", "content": content, "is_error": false}}}, result)
}

func (t *transcript) assistantText(text string) {
	t.assistant([]any{map[string]any{"type": "text", "text": text}})
}

func (t *transcript) attachment(text string) {
	t.line("attachment", [][2]any{{"attachment", map[string]any{"type": "file", "filename": ".env.local", "content": text}}})
}

// Subagent returns a sidechain transcript (agent-<agentID>.jsonl) whose
// tool result carries secret.
func Subagent(sessionID, agentID, cwd string, s Secret) []byte {
	t := &transcript{sid: sessionID, cwd: cwd, n: 1000}
	var b bytes.Buffer
	t.user(map[string]any{"role": "user", "content": "Find the leaked credential in the logs."}, nil)
	t.toolUse("toolu_sub"+strings.Repeat("y", 20), "Bash", map[string]any{"command": "grep -r KEY logs/"})
	out := "logs/app.log: " + s.Text + "\n"
	t.toolResult("toolu_sub"+strings.Repeat("y", 20), out, map[string]any{"stdout": out, "stderr": "", "interrupted": false, "isImage": false})
	for _, l := range bytes.SplitAfter(t.buf.Bytes(), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		l = bytes.Replace(l, []byte(`"isSidechain":false`), []byte(`"isSidechain":true`), 1)
		l = bytes.Replace(l, []byte(`"userType":"external"`), []byte(`"userType":"external","agentId":"`+agentID+`"`), 1)
		b.Write(l)
	}
	return b.Bytes()
}

// Leaks returns the secrets whose value (as written, or JSON-escaped)
// occurs in data, and a 16-byte piece of any of them.
func Leaks(data []byte, secrets []Secret) []string {
	var out []string
	for _, s := range secrets {
		forms := []string{s.Value, strings.Trim(string(marshal(s.Value)), `"`)}
		if len(s.Value) >= 32 && !strings.Contains(s.Value, "\n") {
			mid := len(s.Value) / 2
			forms = append(forms, s.Value[mid-8:mid+8])
		}
		for _, l := range strings.Split(s.Value, "\n") {
			if len(l) >= 16 && strings.Contains(s.Value, "\n") && !strings.HasPrefix(l, "-----") {
				forms = append(forms, l)
			}
		}
		for _, f := range forms {
			if bytes.Contains(data, []byte(f)) {
				out = append(out, s.Kind)
				break
			}
		}
	}
	return out
}

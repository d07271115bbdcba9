package redact

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
)

// Rule finds one kind of secret. A rule runs on a string value only when
// one of its keywords occurs in it (case-insensitively), so most strings
// cost one pass of the keyword filter and no regular expression.
type Rule struct {
	// ID names the rule in markers, counts and reports: letters, digits,
	// '-', '_' and '.'.
	ID string `json:"id"`
	// Description says what it finds, for people.
	Description string `json:"description,omitempty"`
	// Regex finds the secret (RE2 syntax).
	Regex string `json:"regex"`
	// SecretGroup is the capture group holding the secret; 0 is the whole
	// match.
	SecretGroup int `json:"secret_group,omitempty"`
	// Keywords: the rule runs only on strings holding one of them. At
	// least one, of two bytes or more.
	Keywords []string `json:"keywords"`
	// Entropy is the least Shannon entropy (bits per byte) a secret must
	// have; 0 takes every match.
	Entropy float64 `json:"entropy,omitempty"`
	// NeedDigit: the secret must hold a digit (for generic assignments,
	// where identifiers such as process.env.API_KEY would match).
	NeedDigit bool `json:"need_digit,omitempty"`
	// Allow are regexes: a secret that matches one is left alone.
	Allow []string `json:"allow,omitempty"`
	// Span is how far past a keyword (in bytes) a match may end; default
	// 1024. A match must lie within 128 bytes before a keyword and Span
	// after it.
	Span int `json:"span,omitempty"`
	// Assignment: the rule runs only where a keyword is followed (after
	// the rest of its name and a quote) by ':' or '=': NAME=value,
	// "name": "value", Authorization: Bearer.
	Assignment bool `json:"assignment,omitempty"`
	// Generic: on the same bytes, any other rule's finding wins (and names
	// the secret's kind).
	Generic bool `json:"generic,omitempty"`
}

// compiled is a Rule ready to run.
type compiled struct {
	Rule
	re *regexp.Regexp
	// anchored is re anchored at the start, for Assignment rules: it runs
	// once from the start of the name around each keyword.
	anchored *regexp.Regexp
	allow    []*regexp.Regexp
}

var ruleIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`) })

func compileRule(r Rule) (compiled, error) {
	if !ruleIDRE().MatchString(r.ID) {
		return compiled{}, fmt.Errorf("rule %q: an id is letters, digits, '-', '_' and '.'", r.ID)
	}
	re, err := regexp.Compile(r.Regex)
	if err != nil {
		return compiled{}, fmt.Errorf("rule %s: regex: %w", r.ID, err)
	}
	if r.SecretGroup < 0 || r.SecretGroup > re.NumSubexp() {
		return compiled{}, fmt.Errorf("rule %s: secret_group %d: the regex has %d groups", r.ID, r.SecretGroup, re.NumSubexp())
	}
	if len(r.Keywords) == 0 {
		return compiled{}, fmt.Errorf("rule %s: no keywords: a rule needs at least one", r.ID)
	}
	for _, k := range r.Keywords {
		if len(k) < 2 {
			return compiled{}, fmt.Errorf("rule %s: keyword %q: keywords have two bytes or more", r.ID, k)
		}
	}
	c := compiled{Rule: r, re: re}
	if r.Assignment {
		c.anchored = regexp.MustCompile(`^(?:` + r.Regex + `)`)
	}
	for _, a := range r.Allow {
		are, err := regexp.Compile(a)
		if err != nil {
			return compiled{}, fmt.Errorf("rule %s: allow %q: %w", r.ID, a, err)
		}
		c.allow = append(c.allow, are)
	}
	return c, nil
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// genericAllow are values of generic assignments that are placeholders or
// references, not secrets.
var genericAllow = []string{
	`^\$\{?[A-Za-z_]`,                       // $VAR, ${VAR}
	`^(?:<|\{\{|%[sd(]|\*{3,}|x{5,}|X{5,})`, // <your-key>, {{ .Token }}, %s, ***, xxxxx
	`(?i)^(?:true|false|null|none|undefined|changeme|password|example|redacted)`,
	`^\[REDACTED:`,
}

// BuiltinRules is scribe's own rule set: the credential formats that
// transcripts carry most (tool output of cat .env, printenv, config files,
// curl commands), each anchored on a fixed prefix where the format has one.
func BuiltinRules() []Rule {
	return []Rule{
		{ID: "aws-access-key-id", Regex: `\b((?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b`, SecretGroup: 1, Keywords: []string{"akia", "asia", "abia", "acca"}},
		{ID: "aws-secret-access-key", Regex: `(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`, SecretGroup: 1, Keywords: []string{"secret_access", "secretaccess"}},
		{ID: "gcp-api-key", Regex: `\bAIza[0-9A-Za-z_\-]{35}`, Keywords: []string{"aiza"}},
		{ID: "gcp-service-account-key-id", Regex: `"private_key_id"\s*:\s*"([a-f0-9]{40})"`, SecretGroup: 1, Keywords: []string{"private_key_id"}},
		{ID: "google-oauth-client-secret", Regex: `\bGOCSPX-[A-Za-z0-9_\-]{28}`, Keywords: []string{"gocspx-"}},
		{ID: "google-oauth-access-token", Regex: `\bya29\.[A-Za-z0-9_\-]{30,}`, Keywords: []string{"ya29."}},
		{ID: "azure-storage-account-key", Regex: `(?i)AccountKey=([A-Za-z0-9+/]{86}==)`, SecretGroup: 1, Keywords: []string{"accountkey="}},
		{ID: "azure-ad-client-secret", Regex: `(?:^|[^A-Za-z0-9_~.-])([A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34})(?:[^A-Za-z0-9_~.-]|$)`, SecretGroup: 1, Keywords: []string{"q~"}},
		{ID: "azure-sas-signature", Regex: `[?&]sig=([A-Za-z0-9%+/]{40,}(?:%3D|=){0,2})`, SecretGroup: 1, Keywords: []string{"sig="}},
		{ID: "github-pat", Regex: `\bghp_[A-Za-z0-9]{36}\b`, Keywords: []string{"ghp_"}},
		{ID: "github-oauth-token", Regex: `\bgho_[A-Za-z0-9]{36}\b`, Keywords: []string{"gho_"}},
		{ID: "github-app-token", Regex: `\bgh[us]_[A-Za-z0-9]{36}\b`, Keywords: []string{"ghu_", "ghs_"}},
		{ID: "github-refresh-token", Regex: `\bghr_[A-Za-z0-9]{36,76}\b`, Keywords: []string{"ghr_"}},
		{ID: "github-fine-grained-pat", Regex: `\bgithub_pat_[A-Za-z0-9_]{82}\b`, Keywords: []string{"github_pat_"}},
		{ID: "gitlab-pat", Regex: `\bglpat-[A-Za-z0-9_\-]{20,}`, Keywords: []string{"glpat-"}},
		{ID: "gitlab-runner-token", Regex: `\bglrt-[A-Za-z0-9_\-]{20,}`, Keywords: []string{"glrt-"}},
		{ID: "gitlab-deploy-token", Regex: `\bgldt-[A-Za-z0-9_\-]{20,}`, Keywords: []string{"gldt-"}},
		{ID: "slack-token", Regex: `\bxox[baprse]-[A-Za-z0-9-]{10,}`, Keywords: []string{"xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-", "xoxe-"}},
		{ID: "slack-app-token", Regex: `\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+`, Keywords: []string{"xapp-"}},
		{ID: "slack-webhook-url", Regex: `https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}`, Keywords: []string{"hooks.slack.com"}},
		{ID: "stripe-secret-key", Regex: `\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}`, Keywords: []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"}},
		{ID: "stripe-webhook-secret", Regex: `\bwhsec_[A-Za-z0-9]{32,}`, Keywords: []string{"whsec_"}},
		{ID: "twilio-api-key", Regex: `(?i)twilio[A-Za-z0-9_]*["']?\s*[:=]\s*["']?(SK[0-9a-fA-F]{32})\b`, SecretGroup: 1, Keywords: []string{"twilio"}},
		{ID: "twilio-auth-token", Regex: `(?i)twilio[A-Za-z0-9_]*(?:auth|token|secret)[A-Za-z0-9_]*["']?\s*[:=]\s*["']?([a-f0-9]{32})\b`, SecretGroup: 1, Keywords: []string{"twilio"}},
		{ID: "openai-api-key", Regex: `\bsk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}|\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}`, Keywords: []string{"t3blbkfj", "sk-proj-", "sk-svcacct-", "sk-admin-"}},
		{ID: "anthropic-api-key", Regex: `\bsk-ant-(?:api|admin|oat|sid)\d\d-[A-Za-z0-9_\-]{40,}`, Keywords: []string{"sk-ant-"}},
		{ID: "jwt", Regex: `\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`, Keywords: []string{"eyj"}},
		{ID: "private-key", Regex: `-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----`, Keywords: []string{"-----begin"}, Span: 32 << 10},
		{ID: "database-url-password", Regex: `\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|jdbc:[a-z]+)://[^\s:/@"'<>]+:([^\s@/"'<>]{3,})@`, SecretGroup: 1, Keywords: []string{"postgres", "mysql", "mariadb", "mongodb", "redis", "amqp", "mssql", "sqlserver", "jdbc:"},
			Allow: []string{`^\$\{?[A-Za-z_]`, `^(?:<|\{\{|\*+$|x+$)`, `(?i)^(?:password|pass|pwd|secret)$`}},
		{ID: "authorization-header", Regex: `(?i)\bauthorization["']?\s*[:=]\s*["']?(?:bearer|basic|token|bot)\s+([A-Za-z0-9._~+/\-]{8,}=*)`, SecretGroup: 1, Keywords: []string{"authorization"}, Assignment: true},
		{ID: "bearer-token", Regex: `(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{20,}=*)`, SecretGroup: 1, Keywords: []string{"bearer"}, Entropy: 3.5, NeedDigit: true, Generic: true},
		{ID: "npm-token", Regex: `\bnpm_[A-Za-z0-9]{36}\b`, Keywords: []string{"npm_"}},
		{ID: "pypi-token", Regex: `\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}`, Keywords: []string{"pypi-ageichlwas5vcmc"}},
		{ID: "sendgrid-api-key", Regex: `\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}`, Keywords: []string{"sg."}},
		{ID: "mailgun-api-key", Regex: `\bkey-[0-9a-f]{32}\b`, Keywords: []string{"key-"}},
		{ID: "digitalocean-token", Regex: `\bdo[opr]_v1_[a-f0-9]{64}\b`, Keywords: []string{"dop_v1_", "doo_v1_", "dor_v1_"}},
		{ID: "heroku-api-key", Regex: `(?i)heroku[A-Za-z0-9_ .\-]{0,20}["']?\s*[:=]\s*["']?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b`, SecretGroup: 1, Keywords: []string{"heroku"}},
		{ID: "shopify-token", Regex: `\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`, Keywords: []string{"shpat_", "shpca_", "shppa_", "shpss_"}},
		{ID: "huggingface-token", Regex: `\bhf_[A-Za-z]{34}\b`, Keywords: []string{"hf_"}},
		{ID: "databricks-token", Regex: `\bdapi[a-f0-9]{32}(?:-\d)?\b`, Keywords: []string{"dapi"}},
		{ID: "telegram-bot-token", Regex: `\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b`, Keywords: []string{":aa"}},
		{ID: "square-token", Regex: `\bsq0(?:atp|csp)-[A-Za-z0-9_\-]{22,43}\b|\bEAAA[A-Za-z0-9_\-]{60}\b`, Keywords: []string{"sq0atp-", "sq0csp-", "eaaa"}},
		{ID: "age-secret-key", Regex: `\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b`, Keywords: []string{"age-secret-key-"}},
		{ID: "vault-token", Regex: `\bhv[sb]\.[A-Za-z0-9_\-]{90,}`, Keywords: []string{"hvs.", "hvb."}},
		{ID: "linear-api-key", Regex: `\blin_api_[A-Za-z0-9]{40}\b`, Keywords: []string{"lin_api_"}},
		{ID: "postman-api-key", Regex: `\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b`, Keywords: []string{"pmak-"}},
		{ID: "doppler-token", Regex: `\bdp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,44}\b`, Keywords: []string{"dp.pt.", "dp.st.", "dp.sa.", "dp.ct."}},
		{ID: "grafana-token", Regex: `\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|\bglc_[A-Za-z0-9+/]{32,}={0,2}`, Keywords: []string{"glsa_", "glc_"}},
		{ID: "generic-secret-assignment",
			Regex:       `(?i)\b[A-Z0-9_.\-]*(?:password|passwd|secret|token|api_?key|access_?key|private_?key|credentials?|auth_?key)[A-Z0-9_\-]*["']?\s*[:=]\s*["']?([^\s"'#,;\\)(]{8,})`,
			SecretGroup: 1, Entropy: 3.0, NeedDigit: true, Allow: genericAllow, Generic: true, Assignment: true, Span: 320,
			Keywords: []string{"password", "passwd", "secret", "token", "api_key", "apikey", "access_key", "accesskey", "private_key", "credential", "auth_key"}},
	}
}

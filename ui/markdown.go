package ui

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// Markdown from a transcript is hostile input: goldmark renders it with raw
// HTML off (the default), and the node renderers below replace goldmark's
// own for what could still reach the page: raw HTML is shown as escaped
// text (so a "<script>" in an answer reads as such, rather than vanishing),
// a link keeps its href only for http, https, mailto and same-site
// addresses, and an image is shown as a link to it (the page loads nothing
// from elsewhere). Fenced code is highlighted by chroma with CSS classes.

// maxHighlight is the size above which a code block is shown plain: a
// lexer's time and a token's span per word grow with it.
const maxHighlight = 64 << 10

// markdown renders a transcript's Markdown to safe HTML.
type markdown struct {
	md  goldmark.Markdown
	fmt *chromahtml.Formatter
}

func newMarkdown() *markdown {
	m := &markdown{fmt: chromahtml.New(chromahtml.WithClasses(true), chromahtml.TabWidth(4))}
	m.md = goldmark.New(
		goldmark.WithExtensions(extension.Strikethrough, extension.Linkify, extension.TaskList,
			extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute))),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(safeNodes{m}, 100))),
	)
	return m
}

// render turns src into HTML (on a goldmark error, the escaped text).
func (m *markdown) render(src string) template.HTML {
	var b bytes.Buffer
	if err := m.md.Convert([]byte(src), &b); err != nil {
		return template.HTML("<p>" + template.HTMLEscapeString(src) + "</p>")
	}
	return template.HTML(b.String()) // goldmark escaped it; safeNodes vetted what it would not
}

// code is a block of code as highlighted HTML (plain, escaped, when no
// lexer fits or it is large).
func (m *markdown) code(lang, src string) template.HTML {
	var lx chroma.Lexer
	if lang != "" && len(src) <= maxHighlight {
		lx = lexers.Get(lang)
	}
	if lx == nil {
		return template.HTML(`<pre class="code">` + template.HTMLEscapeString(src) + `</pre>`)
	}
	it, err := chroma.Coalesce(lx).Tokenise(nil, src)
	var b bytes.Buffer
	if err == nil {
		err = m.fmt.Format(&b, styles.Fallback, it) // the formatter escapes every token
	}
	if err != nil {
		return template.HTML(`<pre class="code">` + template.HTMLEscapeString(src) + `</pre>`)
	}
	return template.HTML(b.String())
}

// chromaCSS is the highlighting's style sheet: light, or dark when the
// system prefers it (each under its own media query: a token class one
// style colours and the other does not must not keep the wrong one).
func chromaCSS() string {
	f := chromahtml.New(chromahtml.WithClasses(true))
	var light, dark bytes.Buffer
	_ = f.WriteCSS(&light, styles.Get("github"))
	_ = f.WriteCSS(&dark, styles.Get("github-dark"))
	return "@media not all and (prefers-color-scheme: dark) {\n" + light.String() + "}\n" +
		"@media (prefers-color-scheme: dark) {\n" + dark.String() + "}\n"
}

// safeNodes renders the nodes through which a transcript could put markup
// or a dangerous address into the page, and code blocks.
type safeNodes struct{ m *markdown }

func (s safeNodes) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, s.rawHTML)
	reg.Register(ast.KindHTMLBlock, s.htmlBlock)
	reg.Register(ast.KindLink, s.link)
	reg.Register(ast.KindAutoLink, s.autoLink)
	reg.Register(ast.KindImage, s.image)
	reg.Register(ast.KindFencedCodeBlock, s.codeBlock)
	reg.Register(ast.KindCodeBlock, s.codeBlock)
}

func (safeNodes) rawHTML(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		segs := n.(*ast.RawHTML).Segments
		for i := range segs.Len() {
			seg := segs.At(i)
			_, _ = w.WriteString(template.HTMLEscapeString(string(seg.Value(src))))
		}
	}
	return ast.WalkSkipChildren, nil
}

func (safeNodes) htmlBlock(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	b := n.(*ast.HTMLBlock)
	var text strings.Builder
	for i := range b.Lines().Len() {
		line := b.Lines().At(i)
		text.Write(line.Value(src))
	}
	if b.HasClosure() {
		text.Write(b.ClosureLine.Value(src))
	}
	_, _ = w.WriteString(`<p class="rawhtml">` + template.HTMLEscapeString(text.String()) + "</p>\n")
	return ast.WalkSkipChildren, nil
}

func (safeNodes) link(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		_, _ = w.WriteString("</a>")
		return ast.WalkContinue, nil
	}
	l := n.(*ast.Link)
	writeAnchor(w, string(l.Destination), string(l.Title))
	return ast.WalkContinue, nil
}

func (safeNodes) autoLink(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	l := n.(*ast.AutoLink)
	url := string(l.URL(src))
	switch {
	case l.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(url), "mailto:"):
		url = "mailto:" + url
	case strings.HasPrefix(strings.ToLower(url), "www."):
		url = "http://" + url
	}
	writeAnchor(w, url, "")
	_, _ = w.WriteString(template.HTMLEscapeString(string(l.Label(src))) + "</a>")
	return ast.WalkContinue, nil
}

// image shows a Markdown image as a link to it, its alt text the label.
func (safeNodes) image(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	img := n.(*ast.Image)
	writeAnchor(w, string(img.Destination), string(img.Title))
	var alt strings.Builder
	for c := img.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			alt.Write(t.Segment.Value(src))
		}
	}
	_, _ = w.WriteString("[image: " + template.HTMLEscapeString(alt.String()) + "]</a>")
	return ast.WalkSkipChildren, nil
}

func (s safeNodes) codeBlock(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	var lang string
	if f, ok := n.(*ast.FencedCodeBlock); ok {
		lang = string(f.Language(src))
	}
	var code strings.Builder
	for i := range n.Lines().Len() {
		line := n.Lines().At(i)
		code.Write(line.Value(src))
	}
	_, _ = w.WriteString(string(s.m.code(lang, code.String())))
	return ast.WalkSkipChildren, nil
}

// writeAnchor opens an <a>, with the href only when href is safe.
func writeAnchor(w util.BufWriter, href, title string) {
	_, _ = w.WriteString("<a")
	if safeHref(href) {
		_, _ = w.WriteString(` href="` + template.HTMLEscapeString(href) + `"`)
	}
	if title != "" {
		_, _ = w.WriteString(` title="` + template.HTMLEscapeString(title) + `"`)
	}
	_, _ = w.WriteString(` rel="noopener noreferrer nofollow">`)
}

// safeHref reports whether a link may keep its address: http, https and
// mailto, or one without a scheme (a path, a fragment). Anything with
// another scheme (javascript:, data:, vbscript:, file:, and their
// disguises: a scheme is whatever precedes the first ':' that comes
// before any '/', '?' or '#') is dropped.
func safeHref(href string) bool {
	h := strings.TrimSpace(href)
	if h == "" {
		return false
	}
	for _, r := range h {
		if r < 0x20 || r == 0x7f || r == '\\' { // a backslash is a slash to a browser
			return false
		}
	}
	i := strings.IndexAny(h, ":/?#")
	if i < 0 || h[i] != ':' {
		return !strings.HasPrefix(h, "//") // a scheme-relative address leaves the site
	}
	switch strings.ToLower(h[:i]) {
	case "http", "https", "mailto":
		return true
	}
	return false
}

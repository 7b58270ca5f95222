package consolidate

import (
	"encoding/json"
	"strings"
)

// ContextProfile is a profile as a context shows it.
type ContextProfile struct {
	ID      string
	Subject string
	Content string
}

// ContextBlock renders profiles for a context of format (xml, json or
// text), to open it: the subject's current facts, each with its ids.
func ContextBlock(format string, ps []ContextProfile) string {
	if len(ps) == 0 {
		return ""
	}
	var b strings.Builder
	switch format {
	case "json":
		type jp struct {
			ID      string `json:"id"`
			Subject string `json:"subject"`
			Content string `json:"content"`
		}
		out := make([]jp, len(ps))
		for i, p := range ps {
			out[i] = jp{p.ID, p.Subject, strings.ToValidUTF8(p.Content, "\uFFFD")}
		}
		j, _ := json.Marshal(out) // strings only: cannot fail
		b.WriteString(`"profiles":`)
		b.Write(j)
	case "text":
		for _, p := range ps {
			b.WriteString(p.Content)
			b.WriteString("\n\n")
		}
	default:
		for _, p := range ps {
			b.WriteString(`<profile subject="`)
			b.WriteString(xmlEscapeText(p.Subject))
			b.WriteString(`" id="`)
			b.WriteString(xmlEscapeText(p.ID))
			b.WriteString(`">`)
			b.WriteString(xmlEscapeText(p.Content))
			b.WriteString("</profile>\n")
		}
	}
	return b.String()
}

var xmlTextEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func xmlEscapeText(s string) string { return xmlTextEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD")) }

// SpliceContext puts block at the start of a rendered context: after the
// root element's opening tag (xml), as the object's first member (json),
// or before everything (text).
func SpliceContext(format string, out []byte, block string) []byte {
	if block == "" {
		return out
	}
	s := string(out)
	switch format {
	case "json":
		i := strings.IndexByte(s, '{')
		if i < 0 {
			return out
		}
		rest := strings.TrimLeft(s[i+1:], " \n\t")
		sep := ","
		if strings.HasPrefix(rest, "}") {
			sep = ""
		}
		return []byte(s[:i+1] + block + sep + s[i+1:])
	case "text":
		return []byte(block + s)
	default:
		const open = "<unlimited_context>\n"
		i := strings.Index(s, open)
		if i < 0 {
			return out
		}
		return []byte(s[:i+len(open)] + block + s[i+len(open):])
	}
}

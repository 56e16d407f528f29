package message

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"
)

// Subject is the one-line summary: an e-mail's subject, a chat message's
// first line. It never holds a line break.
func (m Message) Subject() string { return m.build().Subject }

// Text is the message as plain text.
func (m Message) Text() string {
	v := m.build()
	var b strings.Builder
	b.WriteString(v.Headline + "\n")
	for _, d := range v.Details {
		b.WriteString(d + "\n")
	}
	if len(v.Items) > 0 {
		b.WriteString("\n")
	}
	for _, it := range v.Items {
		b.WriteString("- " + it.summary() + "\n")
		if it.Error != "" {
			b.WriteString("  Error: " + it.Error + "\n")
		}
		if it.Link != "" {
			b.WriteString("  " + it.Link + "\n")
		}
	}
	if v.More > 0 {
		b.WriteString("and " + strconv.Itoa(v.More) + " more\n")
	}
	b.WriteString("\n")
	if v.ProjectLink != "" {
		b.WriteString("Project " + v.ProjectName + ": " + v.ProjectLink + "\n")
	}
	b.WriteString("Alert group: " + v.GroupID + "\n")
	return b.String()
}

// summary is an item's first line: endpoint, hook and attempts.
func (it item) summary() string {
	s := it.Endpoint
	if it.HookID != "" {
		s += ", hook " + it.HookID
	}
	if it.Attempts > 0 {
		s += ", " + plural(int(it.Attempts), "attempt", "attempts")
	}
	return s
}

var htmlTemplate = template.Must(template.New("message").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body style="font-family: sans-serif">
<p><strong>{{.Headline}}</strong></p>
{{range .Details}}<p>{{.}}</p>
{{end}}{{if .Items}}<ul>
{{range .Items}}<li>{{.Summary}}{{if .Error}}<br>Error: <code>{{.Error}}</code>{{end}}{{if .Link}}<br><a href="{{.Link}}">{{.Link}}</a>{{end}}</li>
{{end}}</ul>
{{end}}{{if .More}}<p>and {{.More}} more</p>
{{end}}{{if .ProjectLink}}<p>Project {{.ProjectName}}: <a href="{{.ProjectLink}}">{{.ProjectLink}}</a></p>
{{end}}<p style="color: #666">Alert group: {{.GroupID}}</p>
</body></html>
`))

// htmlItem gives the template an item's summary as a field.
type htmlItem struct {
	item
	Summary string
}

// HTML is the message as an HTML document; everything that came from a
// user (names, paths, errors) is escaped.
func (m Message) HTML() string {
	v := m.build()
	items := make([]htmlItem, len(v.Items))
	for i, it := range v.Items {
		items[i] = htmlItem{item: it, Summary: it.summary()}
	}
	data := struct {
		view
		Items []htmlItem
	}{view: v, Items: items}
	var b strings.Builder
	if err := htmlTemplate.Execute(&b, data); err != nil {
		// The template and its data are fixed: failing is a bug.
		panic(fmt.Sprintf("message: HTML template: %v", err))
	}
	return b.String()
}

// Chat is the JSON body of a Slack-compatible incoming webhook:
// {"text": ...} in Slack's mrkdwn, with &, < and > escaped as Slack
// requires and links written <url|label>.
func (m Message) Chat() ([]byte, error) {
	v := m.build()
	var b strings.Builder
	b.WriteString("*[Sundial]* " + slackEscape(v.Headline) + "\n")
	for _, d := range v.Details {
		b.WriteString(slackEscape(d) + "\n")
	}
	for _, it := range v.Items {
		b.WriteString("• " + slackEscape(it.Endpoint))
		if it.HookID != "" {
			b.WriteString(", hook " + slackLink(it.Link, it.HookID))
		}
		if it.Attempts > 0 {
			b.WriteString(", " + plural(int(it.Attempts), "attempt", "attempts"))
		}
		if it.Error != "" {
			b.WriteString(": " + slackEscape(it.Error))
		}
		b.WriteString("\n")
	}
	if v.More > 0 {
		b.WriteString("and " + strconv.Itoa(v.More) + " more\n")
	}
	if v.ProjectLink != "" {
		b.WriteString(slackLink(v.ProjectLink, "Open "+v.ProjectName+" in the dashboard") + " · ")
	}
	b.WriteString("alert group " + v.GroupID)
	return marshal(struct {
		Text string `json:"text"`
	}{b.String()})
}

// slackEscape escapes the three characters Slack reads as markup.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackLink is <url|label>, or the bare label without a URL. A "|" in the
// label would end it early, so it becomes a look-alike.
func slackLink(url, label string) string {
	label = slackEscape(strings.ReplaceAll(label, "|", "¦"))
	if url == "" {
		return label
	}
	return "<" + slackEscape(url) + "|" + label + ">"
}

// marshal encodes v as JSON without escaping &, < and > to \u sequences:
// the receivers read them as they are.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("message: encode: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

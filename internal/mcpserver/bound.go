package mcpserver

import (
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result bounds. A tool result is read into a model's context, so every
// one is bounded: about 8K tokens of text (MaxResultBytes, at about four
// bytes a token). Tools that return items cut the items' contents to fit
// (fitItems) and say, in a marker after each cut content, the call that
// reads on; the structured content carries the same cut items (never the
// whole content a second time). boundText is the net under every tool.
const (
	MaxResultBytes = 32 << 10
	// itemsBudget is what the items of one result may take; the rest is
	// for the result's own header and footer lines.
	itemsBudget = MaxResultBytes - 2<<10
	// itemOverhead is about what an item's header line and marker take.
	itemOverhead = 200
	// minContent is the least content an item is shown with; an item that
	// does not get that much is left to the next page.
	minContent = 512
	// textSlack lets a tool's own markers and footers pass boundText.
	textSlack = 4 << 10
	// maxEcho bounds an argument repeated in a result (a query).
	maxEcho = 200
)

// cutAt returns the largest n' ≤ n at which s can be cut without
// splitting a UTF-8 sequence.
func cutAt(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	if n <= 0 {
		return 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// window returns the part of item content from offset (moved back to a
// rune start), at most limit bytes, setting the item's Offset, Size and
// NextOffset. offset past the end gives empty content.
func window(it *Item, offset, limit int) {
	whole := it.Content
	if offset > len(whole) {
		offset = len(whole)
	}
	offset = cutAt(whole, offset)
	end := offset + cutAt(whole[offset:], limit)
	it.Content = whole[offset:end]
	it.Offset = offset
	if offset > 0 || end < len(whole) {
		it.Size = len(whole)
	}
	if end < len(whole) {
		it.NextOffset = end
	}
}

// fitItems cuts the items' contents so that together, rendered, they take
// about budget bytes, and returns how many fit: the first always does
// (cut if it must), a later one only with at least minContent bytes of
// its content. A cut content's item says where the rest starts.
func fitItems(items []Item, budget int) int {
	left := budget
	for i := range items {
		it := &items[i]
		over := itemOverhead + len(it.Meta)*32
		if it.Tool != nil {
			over += len(it.Tool.Args)
		}
		if i > 0 && left < over+min(len(it.Content), minContent) {
			return i
		}
		if room := max(left-over, minContent); len(it.Content) > room {
			n := cutAt(it.Content, room)
			if it.Size == 0 {
				it.Size = it.Offset + len(it.Content)
			}
			it.NextOffset = it.Offset + n
			it.Content = it.Content[:n]
		}
		left -= over + len(it.Content)
	}
	return len(items)
}

// cutMarker is what follows a cut content: the call that reads on.
func cutMarker(it Item) string {
	return fmt.Sprintf("[cut at byte %d of %d; read on: uc_get {\"ids\":[%q],\"offset\":%d}]", it.NextOffset, it.Size, it.ID, it.NextOffset)
}

// boundText cuts the text of a result longer than MaxResultBytes (with
// textSlack for the markers of tools that bound their items themselves),
// with a marker saying how to get less.
func boundText(res *mcp.CallToolResult) {
	if res == nil {
		return
	}
	for _, c := range res.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok || len(t.Text) <= MaxResultBytes+textSlack {
			continue
		}
		n := cutAt(t.Text, MaxResultBytes)
		t.Text = t.Text[:n] + fmt.Sprintf("\n[result cut at byte %d of %d: ask for less (limit, k, a shorter period or span)]\n", n, len(t.Text))
	}
}

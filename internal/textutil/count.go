package textutil

// CountContentWords is len(ContentWords(s)) without building the words:
// the full-text projection counts every chunk's words for BM25's average
// length, and building them was 5% of its indexing CPU (EachContentWord).
func CountContentWords(s string) int {
	n := 0
	EachContentWord(s, func(string, []byte) { n++ })
	return n
}

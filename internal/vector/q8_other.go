//go:build !amd64 || purego

package vector

const useAVX2 = false

func dotQ8Blocks(q []int16, v []int8) int64 { return dotQ8Generic(q, v) }

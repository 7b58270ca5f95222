package projections

// SetFileResident makes FitBulkLimit read f instead of the kernel's
// figure, until restore.
func SetFileResident(f func() int64) (restore func()) {
	old := fileResident
	fileResident = f
	return func() { fileResident = old }
}

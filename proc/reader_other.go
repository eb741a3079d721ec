//go:build !linux

package proc

// TableReader reads the process table again and again; off Linux, each
// read is Table.
type TableReader struct{}

// NewTableReader returns a reader.
func NewTableReader(int) *TableReader { return &TableReader{} }

// Table is Table.
func (r *TableReader) Table() ([]Info, error) { return table() }

// Shape is Table.
func (r *TableReader) Shape() ([]Info, error) { return table() }

// Refresh gives ps as they are.
func (r *TableReader) Refresh(ps []Info) []Info { return ps }

// Close does nothing.
func (r *TableReader) Close() {}

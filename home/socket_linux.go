package home

// MaxSocketPath is sun_path's size less its terminating NUL: the longest
// path a unix socket may have.
const MaxSocketPath = 107

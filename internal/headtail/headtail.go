// Package headtail keeps the beginning and the end of a child process's output in bounded
// memory: a crash report starts with its reason and a panic or traceback ends with it.
package headtail

// Buffer is an io.Writer that keeps the first and the last Max/2 bytes written.
type Buffer struct {
	Max        int
	head, tail []byte
}

func (b *Buffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.Max/2 - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	b.tail = append(b.tail, p...)
	if over := len(b.tail) - b.Max/2; over > 0 {
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	return n, nil
}

// String returns the kept head and tail, joined.
func (b *Buffer) String() string { return string(b.head) + string(b.tail) }

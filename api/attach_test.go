package api

import (
	"os"
	"reflect"
	"testing"
)

func TestFrames(t *testing.T) {
	t.Parallel()
	r, w, _ := os.Pipe()
	go func() {
		WriteFrame(w, FrameInput, []byte("hi"))
		WriteFrame(w, FrameResize, ResizePayload(50, 200))
		w.Close()
	}()
	typ, p, err := ReadFrame(r)
	if err != nil || typ != FrameInput || string(p) != "hi" {
		t.Fatalf("frame 1 = %c %q %v", typ, p, err)
	}
	typ, p, err = ReadFrame(r)
	if err != nil || typ != FrameResize || !reflect.DeepEqual(p, []byte{0, 50, 0, 200}) {
		t.Fatalf("frame 2 = %c %v %v", typ, p, err)
	}
	if _, _, err := ReadFrame(r); err == nil {
		t.Fatal("read past the end succeeded")
	}
}

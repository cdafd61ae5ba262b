package thread

import (
	"sync"
	"syscall"
	"testing"
)

func TestCallsRunOnOneOSThreadInOrder(t *testing.T) {
	th := New()
	defer th.Stop()
	var tid int
	th.Call(func() { tid = syscall.Gettid() })
	var wg sync.WaitGroup
	var mu sync.Mutex
	count := 0
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			th.Call(func() {
				if got := syscall.Gettid(); got != tid {
					t.Errorf("ran on thread %d, want %d", got, tid)
				}
				mu.Lock()
				count++
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	if count != 50 {
		t.Fatalf("%d calls ran, want 50", count)
	}
}

func TestPanicReachesCaller(t *testing.T) {
	th := New()
	defer th.Stop()
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want boom", r)
		}
	}()
	th.Call(func() { panic("boom") })
}

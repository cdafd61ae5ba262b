package thread

import (
	"sync"
	"testing"
)

func TestCallsRunOnOneOSThreadInOrder(t *testing.T) {
	th := New()
	defer th.Stop()
	var tid int
	th.Call(func() { tid = osThreadID() })
	var wg sync.WaitGroup
	var mu sync.Mutex
	count := 0
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			th.Call(func() {
				if got := osThreadID(); got != tid {
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

func TestGoRunsBeforeLaterCalls(t *testing.T) {
	th := New()
	defer th.Stop()
	var order []int
	th.Go(func() { order = append(order, 1) })
	th.Go(func() { panic("dropped") })
	th.Call(func() { order = append(order, 2) })
	if len(order) != 2 || order[0] != 1 || order[1] != 2 {
		t.Fatalf("order %v", order)
	}
}

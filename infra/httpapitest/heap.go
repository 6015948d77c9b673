package httpapitest

import (
	"runtime"
	"time"
)

// PeakHeap samples the heap in use every 10 ms while f runs and returns
// f's peak above the heap in use before it (a bound of what f held; other
// goroutines' allocations meanwhile are included).
func PeakHeap(f func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before, peak := ms.HeapInuse, ms.HeapInuse
	done := make(chan struct{})
	sampled := make(chan uint64)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				runtime.ReadMemStats(&ms)
				sampled <- max(peak, ms.HeapInuse)
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
	}()
	f()
	close(done)
	return <-sampled - before
}

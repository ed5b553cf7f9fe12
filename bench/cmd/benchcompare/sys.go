package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// architecture Go runs on.
const clockTicks = 100

// cpuSeconds is the CPU time (user + system) a process has used, from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after it start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return float64(ut+st) / clockTicks, nil
}

// procStatus reads VmRSS (bytes) and Threads from /proc/<pid>/status.
func procStatus(pid int) (rss int64, threads int, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		v = strings.TrimSpace(v)
		switch k {
		case "VmRSS":
			kb, _ := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
			rss = kb * 1024
		case "Threads":
			threads, _ = strconv.Atoi(v)
		}
	}
	return rss, threads, sc.Err()
}

// runDelay is how long the threads of a process have waited on a run queue for a CPU (the second
// field of /proc/<pid>/task/<tid>/schedstat, summed over the threads alive now).
func runDelay(pid int) time.Duration {
	dirs, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var sum int64
	for _, d := range dirs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, d.Name()))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) >= 2 {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			sum += v
		}
	}
	return time.Duration(sum)
}

// loadAvg reads the 1-, 5- and 15-minute load averages.
func loadAvg() [3]float64 {
	var out [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return out
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		out[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return out
}

// Machine is what the figures were measured on.
type Machine struct {
	NProc    int     `json:"nproc"`
	CPUModel string  `json:"cpu_model"`
	MemMiB   int64   `json:"mem_total_mib"`
	Kernel   string  `json:"kernel"`
	Go       string  `json:"go"`
	Java     string  `json:"java"`
	JavaOpts string  `json:"java_opts"`
	Load     float64 `json:"load1_at_start"`
}

func machine() Machine {
	m := Machine{NProc: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				m.MemMiB = kb / 1024
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.Load = loadAvg()[0]
	return m
}

// LoadSample is the load average at one moment of the run.
type LoadSample struct {
	At    float64    `json:"t_s"` // seconds since the run started
	Load  [3]float64 `json:"load"`
	Phase string     `json:"phase"`
}

// loadRecorder samples the load average every few seconds, tagged with the running phase.
type loadRecorder struct {
	start time.Time
	mu    sync.Mutex
	phase string
	all   []LoadSample
	stop  chan struct{}
	done  chan struct{}
}

func newLoadRecorder(every time.Duration) *loadRecorder {
	r := &loadRecorder{start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(every)
		defer t.Stop()
		r.sample()
		for {
			select {
			case <-t.C:
				r.sample()
			case <-r.stop:
				r.sample()
				return
			}
		}
	}()
	return r
}

func (r *loadRecorder) sample() {
	l := loadAvg()
	r.mu.Lock()
	r.all = append(r.all, LoadSample{At: time.Since(r.start).Seconds(), Load: l, Phase: r.phase})
	r.mu.Unlock()
}

func (r *loadRecorder) setPhase(p string) {
	r.mu.Lock()
	r.phase = p
	r.mu.Unlock()
	r.sample()
}

func (r *loadRecorder) samples() []LoadSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]LoadSample(nil), r.all...)
}

func (r *loadRecorder) finish() []LoadSample {
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]LoadSample(nil), r.all...)
}

// PhaseLoad is the 1-minute load average during one phase: mean, min and max of the samples.
type PhaseLoad struct {
	Phase string  `json:"phase"`
	Mean  float64 `json:"mean"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
}

func phaseLoads(samples []LoadSample) []PhaseLoad {
	var out []PhaseLoad
	idx := map[string]int{}
	count := map[string]int{}
	for _, s := range samples {
		if s.Phase == "" {
			continue
		}
		i, ok := idx[s.Phase]
		if !ok {
			i = len(out)
			idx[s.Phase] = i
			out = append(out, PhaseLoad{Phase: s.Phase, Min: s.Load[0], Max: s.Load[0]})
		}
		p := &out[i]
		p.Mean += s.Load[0]
		p.Min, p.Max = min(p.Min, s.Load[0]), max(p.Max, s.Load[0])
		count[s.Phase]++
	}
	for i := range out {
		out[i].Mean /= float64(count[out[i].Phase])
	}
	return out
}

package baseline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ).
const clockTick = 10 * time.Millisecond

// process is riverbase running with its output in a log file.
type process struct {
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// startProcess starts bin with env, output to logPath. The child is killed
// if the benchmark dies (Pdeathsig), so it never outlives a run.
func startProcess(bin string, env []string, logPath string) (*process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("riverbase log: %w", err)
	}
	cmd := exec.Command(bin)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start riverbase: %w", err)
	}
	p := &process{logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits up to grace, then kills.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return p.waitErr
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.waitErr
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("riverbase did not stop within %s after SIGTERM; killed", grace)
	}
}

// readyLine is the JSON log line riverbase prints once it works jobs.
type readyLine struct {
	Msg      string            `json:"msg"`
	Settings map[string]string `json:"settings"`
}

// waitReady polls the log for the ready line, until timeout, the process's
// exit or ctx's end, and returns the settings it lists.
func (p *process) waitReady(ctx context.Context, timeout time.Duration) (map[string]string, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if p.exited() {
			return nil, fmt.Errorf("riverbase exited: %v (see %s)", p.waitErr, p.logPath)
		}
		if s, ok := p.readySettings(); ok {
			return s, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, errors.Join(ctx.Err(), fmt.Errorf("riverbase not ready within %s (see %s)", timeout, p.logPath))
}

func (p *process) readySettings() (map[string]string, bool) {
	raw, err := os.ReadFile(p.logPath)
	if err != nil {
		return nil, false
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line readyLine
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == readyMsg {
			return line.Settings, true
		}
	}
	return nil, false
}

// peakRSS reads VmHWM of /proc/<pid>/status, in bytes.
func peakRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmHWM %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// cpuTime reads utime + stime (fields 14 and 15) of /proc/<pid>/stat;
// fields are counted after the command name's ')', which may hold spaces.
func cpuTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	fields := strings.Fields(string(raw[i+1:]))
	if len(fields) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc stat times: %w", err)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

package suite

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux the benchmark runs on).
const clockTick = 10 * time.Millisecond

// Process is a child process whose output goes to a log file.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	waitErr error
}

// StartProcess starts bin with args and env; stdout and stderr go to
// logPath. The child is killed if the benchmark dies (Pdeathsig), so no
// service outlives an interrupted run.
func StartProcess(name, bin string, args, env []string, logPath string) (*Process, error) {
	return startProcess(name, bin, args, env, logPath, os.O_TRUNC)
}

// RestartProcess starts bin as StartProcess does, but appends to logPath:
// a process started again after a crash, whose log goes on where its
// predecessor's ended, so that readers of the log see both.
func RestartProcess(name, bin string, args, env []string, logPath string) (*Process, error) {
	return startProcess(name, bin, args, env, logPath, os.O_APPEND)
}

func startProcess(name, bin string, args, env []string, logPath string, mode int) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|mode, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, logFile: f, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited says whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop sends SIGTERM and waits up to grace for a graceful exit, then kills.
// Stopping a process that has exited returns how it exited.
func (p *Process) Stop(grace time.Duration) error {
	if exited, err := p.Exited(); exited {
		return err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.waitErr
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %s after SIGTERM; killed", p.Name, grace)
	}
}

// Kill sends SIGKILL, as a crash would, and waits for the process to end.
func (p *Process) Kill() {
	if exited, _ := p.Exited(); exited {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// PeakRSS is the process's peak resident set size so far (VmHWM), in bytes.
func (p *Process) PeakRSS() (int64, error) { return peakRSS(p.Pid()) }

// CPU is the processor time the process has used so far (user + system).
func (p *Process) CPU() (time.Duration, error) { return cpuTime(strconv.Itoa(p.Pid())) }

// RSS is the process's resident set size now (VmRSS), in bytes.
func (p *Process) RSS() (int64, error) { return statusBytes(p.Pid(), "VmRSS:") }

func peakRSS(pid int) (int64, error) { return statusBytes(pid, "VmHWM:") }

// statusBytes reads a "<field> <n> kB" line of /proc/<pid>/status.
func statusBytes(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s %q: %w", field, line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.Join(fmt.Errorf("no %s in /proc status", field), sc.Err())
}

// cpuTime reads utime + stime of /proc/<pid>/stat; pid may be "self".
func cpuTime(pid string) (time.Duration, error) {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	return parseCPU(raw)
}

// parseCPU reads fields 14 and 15 of a /proc/<pid>/stat line; the command
// name (field 2) may hold spaces, so fields are counted after its ')'.
func parseCPU(raw []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	fields := strings.Fields(string(raw[i+1:]))
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
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

// postgresCPU sums the processor time of every process named postgres on
// the machine: the server's backends, including those of other databases.
func postgresCPU() (time.Duration, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil || !bytes.Contains(raw, []byte("(postgres)")) {
			continue // gone meanwhile, or not PostgreSQL
		}
		if d, err := parseCPU(raw); err == nil {
			total += d
		}
	}
	return total, nil
}

// MachineCPU reads the processor time used so far by this benchmark
// process ("bench": receiver and clients) and by all of the machine's
// PostgreSQL processes ("postgres").
func MachineCPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	if d, err := cpuTime("self"); err == nil {
		out["bench"] = d
	}
	if d, err := postgresCPU(); err == nil {
		out["postgres"] = d
	}
	return out
}

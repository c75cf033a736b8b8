//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/binary"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccomp return actions and the layout of struct seccomp_data (linux/seccomp.h).
const (
	retAllow       = 0x7fff0000
	retErrno       = 0x00050000
	retKillProcess = 0x80000000
	offNR          = 0
	offArch        = 4
	offArg0        = 16 // args[0]; its low 32 bits first on the little-endian architectures we build for
)

// deniedSyscalls fail with EPERM inside the sandbox: they create processes, namespaces or mounts,
// or widen the kernel surface (tracing, keyrings, eBPF, io_uring) that user code has no use for.
func deniedSyscalls() []uint32 {
	list := []uintptr{
		unix.SYS_UNSHARE, unix.SYS_SETNS, unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT,
		unix.SYS_CHROOT, unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
		unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN,
		unix.SYS_USERFAULTFD, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_KEXEC_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
		unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
		unix.SYS_FSCONFIG, unix.SYS_MOUNT_SETATTR, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT,
		unix.SYS_ACCT, unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_ADJTIMEX,
	}
	list = append(list, archDenied...)
	out := make([]uint32, len(list))
	for i, nr := range list {
		out[i] = uint32(nr)
	}
	return out
}

// seccompProgram builds the filter bwrap installs on the sandboxed process just before it
// executes the interpreter (bwrap --seccomp takes the raw struct sock_filter array).
//
// Every new process is refused: clone is allowed only with CLONE_THREAD (threads share the
// process's memory limit), fork and vfork fail, and clone3, whose flags sit in memory a filter
// cannot read, reports ENOSYS so that the C library falls back to clone. A fork bomb therefore
// stops at its first fork with "Operation not permitted", whatever uid the server runs as (the
// process-count limit does not bind root). A system call of another ABI kills the process.
func seccompProgram() ([]byte, error) {
	denied := deniedSyscalls()
	eperm := uint32(retErrno | uint32(unix.EPERM))
	enosys := uint32(retErrno | uint32(unix.ENOSYS))
	// Layout (n denied calls): 0 load arch, 1 check it, 2 kill, 3 load nr, 4 foreign ABI?,
	// 5 clone?, 6 clone3?, 7..6+n denied?, 7+n allow, 8+n EPERM, 9+n kill, 10+n load clone
	// flags, 11+n CLONE_THREAD?, 12+n EPERM, 13+n allow, 14+n ENOSYS. A jump at i skipping s
	// lands on i+1+s.
	n := len(denied)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipFalse: 0, SkipTrue: 1},
		bpf.RetConstant{Val: retKillProcess},
		bpf.LoadAbsolute{Off: offNR, Size: 4},
	}
	// x32 calls carry bit 30 on amd64 and are never wanted; harmless elsewhere.
	prog = append(prog, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipTrue: uint8(n + 4)})
	prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(unix.SYS_CLONE), SkipTrue: uint8(n + 4)})
	prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(unix.SYS_CLONE3), SkipTrue: uint8(n + 7)})
	for i, nr := range denied {
		// On a match jump to the EPERM return, which follows the allow.
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(n - i)})
	}
	prog = append(prog,
		bpf.RetConstant{Val: retAllow},          // allow
		bpf.RetConstant{Val: eperm},             // denied calls
		bpf.RetConstant{Val: retKillProcess},    // foreign ABI
		bpf.LoadAbsolute{Off: offArg0, Size: 4}, // clone flags
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_THREAD, SkipTrue: 1},
		bpf.RetConstant{Val: eperm},
		bpf.RetConstant{Val: retAllow},
		bpf.RetConstant{Val: enosys}, // clone3
	)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.LittleEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.LittleEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}

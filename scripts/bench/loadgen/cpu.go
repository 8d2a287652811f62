package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// cpuTimes: CPU seconds (user + system) of the broker process and of this process so far.
type cpuTimes struct {
	broker float64
	self   float64
}

const clockTicks = 100 // USER_HZ on Linux

func takeCPU(brokerPid int) cpuTimes {
	var t cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t.self = float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	}
	if brokerPid > 0 {
		t.broker = processCPU(brokerPid)
	}
	return t
}

// processCPU reads utime + stime (all threads) from /proc/PID/stat.
func processCPU(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	text := string(data)
	fields := strings.Fields(text[strings.LastIndexByte(text, ')')+2:])
	// after "pid (comm) ": state is field 3, utime field 14, stime field 15
	utime, _ := strconv.ParseFloat(fields[14-3], 64)
	stime, _ := strconv.ParseFloat(fields[15-3], 64)
	return (utime + stime) / clockTicks
}

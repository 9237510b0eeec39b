// Package priority lowers the CPU priority of a batch process (the worker),
// so that on a shared host it yields the CPU to the processes serving
// partners' interactive requests.
//
// On Linux niceness belongs to a thread, not a process: Lower renices every
// thread of the process (threads started later inherit it from the thread
// that starts them). Elsewhere it does nothing.
//
// Only whole processes are niced. A niced thread inside a process that also
// serves interactive requests inverts priorities: while the kernel keeps it
// off the CPU it still holds one of the Go runtime's processors, and any
// stop-the-world pause or runtime lock waits for it, so every request of
// that process can stall behind it.
package priority

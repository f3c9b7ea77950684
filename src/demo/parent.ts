/**
 * Ends the development start with the process that started it. `npm start` hands SIGINT and SIGTERM
 * on to the gateway, but npm dies of the signals it does not forward (SIGHUP, SIGKILL): the gateway
 * then notices within `intervalMs` that its parent is gone and shuts down as on SIGTERM (drain, exit),
 * instead of serving on with nobody owning it.
 *
 * Gone means reparented: the kernel hands a dead process's children to init (or a subreaper) as it
 * exits, while the dead parent itself can linger as a zombie, which `kill(pid, 0)` still finds, until
 * its own parent (a shell that has not waited yet) reaps it. So `process.ppid` changing is the one
 * test: a parent's pid cannot be reused while it is still this process's parent.
 */
export const stopWithParent = (intervalMs = 250): void => {
  const parent = process.ppid
  if (parent <= 1) return
  const timer = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(timer)
    process.kill(process.pid, "SIGTERM")
  }, intervalMs)
  timer.unref()
}

import { readRssMb } from "./rss.js"

/** Samples a process's RSS every `everyMs` while work runs; `stop()` gives the peak seen. */
export const sampleRss = (pid: number, everyMs = 100) => {
  let peak: number | undefined
  const take = () => {
    const rss = readRssMb(pid)
    if (rss !== undefined) peak = Math.max(peak ?? 0, rss)
  }
  take()
  const timer = setInterval(take, everyMs)
  return {
    stop: (): number | undefined => {
      clearInterval(timer)
      take()
      return peak
    }
  }
}

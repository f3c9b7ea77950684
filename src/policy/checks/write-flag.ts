import { type CallCheck, deny } from "./check.js"

/** A write tool needs an entry with `allow_write_requests` (which never bypasses approval). */
export const checkWriteFlag: CallCheck = ({ tool }, candidates) => {
  if (!tool.write) return candidates
  const writable = candidates.filter((granted) => granted.entry.allow_write_requests)
  return writable.length === 0 ? deny("write_not_allowed") : writable
}

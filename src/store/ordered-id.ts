import { randomBytes } from "node:crypto"

let lastMillis = 0
let sequence = 0

/**
 * A UUIDv7 (RFC 9562 §5.7) whose order is this process's order of creation: the wall-clock
 * millisecond, then a 12-bit counter within the millisecond (method 1 of §6.2), then random bits.
 * Rows that share a timestamp column (an audit event and the one that follows it in the same
 * millisecond, or under a test clock) then list in the order they were written when sorted by
 * (time, id), where random ids would shuffle them.
 */
export const orderedId = (): string => {
  let millis = Date.now()
  if (millis <= lastMillis) {
    millis = lastMillis
    sequence += 1
    // 4,096 ids in one millisecond: borrow the next one rather than wrap (the order must hold).
    if (sequence > 0xfff) {
      millis += 1
      sequence = 0
    }
  } else {
    sequence = 0
  }
  lastMillis = millis
  const bytes = randomBytes(16)
  bytes.writeUIntBE(millis, 0, 6)
  bytes[6] = 0x70 | (sequence >> 8)
  bytes[7] = sequence & 0xff
  bytes[8] = 0x80 | (bytes[8]! & 0x3f)
  const hex = bytes.toString("hex")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/**
 * A backend failure's class in fixed words, for the health picture and the metrics (docs/operations.md,
 * "Health status"): the reason itself is a library's message, which may quote a URL or a body; the class
 * never does. `connect`, `dns`, `tls`, `timeout`, `http_<status>`, `auth`, `protocol`, `session_lost`, `other`.
 */
export const failureClass = (reason: string): string => {
  const text = reason.toLowerCase()
  if (/enotfound|eai_again|getaddrinfo/.test(text)) return "dns"
  if (/cert|tls|ssl|self[- ]signed/.test(text)) return "tls"
  if (/timeout|timed out|etimedout|deadline/.test(text)) return "timeout"
  if (
    /econnrefused|econnreset|ehostunreach|enetunreach|epipe|socket|could not be reached|fetch failed|other side closed/.test(
      text
    )
  ) {
    return "connect"
  }
  if (/session/.test(text)) return "session_lost"
  const status = /\b(?:http|status)\D{0,3}([1-5]\d\d)\b/.exec(text)
  if (status !== null) return status[1] === "401" || status[1] === "403" ? "auth" : `http_${status[1]}`
  if (/unauthori[sz]ed|forbidden|token/.test(text)) return "auth"
  if (/json|protocol|not a tool result|invalid/.test(text)) return "protocol"
  return "other"
}

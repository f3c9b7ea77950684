/**
 * Every `error` code the gateway answers with, in its error body (docs/errors.md) or, for the
 * authorization endpoint, at the client's redirect URI. A closed list: a new code is added here and to
 * docs/errors.md, and a test checks that the two agree.
 */
export const errorCodes = [
  // Every listener
  "not_found",
  "method_not_allowed",
  "internal_error",
  "unavailable",
  "shutting_down",
  "store_unavailable",
  "too_many_connections",
  "request_timeout",
  // /mcp and the Management API: tokens and requests
  "unauthorized",
  "invalid_token",
  "insufficient_scope",
  "origin_not_allowed",
  "payload_too_large",
  "unsupported_media_type",
  "verifier_unavailable",
  // The authorization server (RFC 6749 §4.1.2.1, §5.2; RFC 8707; OpenID Connect Core §3.1.2.6)
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unsupported_grant_type",
  "invalid_scope",
  "invalid_target",
  "unsupported_response_type",
  "request_not_supported",
  "request_uri_not_supported",
  "login_required",
  "consent_required",
  "access_denied",
  // The Management API
  "forbidden",
  "group_permissions_required",
  "builtin_group",
  "builtin_administrator_required",
  "last_administrator",
  "name_taken",
  "precondition_failed",
  "precondition_required",
  "managed_in_configuration",
  "id_taken",
  "in_use",
  "dependency_changed",
  "not_applied",
  "builtin_administrator",
  "account_disabled",
  "enrolment_pending",
  // Directory snapshots (PUT /sso/directory)
  "stale_version",
  "invalid_snapshot",
  "no_identity_provider",
  "provider_required",
  "too_many_requests"
] as const

export type ErrorCode = (typeof errorCodes)[number]

/**
 * The Archive service (src/events/archive/service.ts) on SQLite and PostgreSQL, against a real HTTPS
 * receiver (test/support/archive-receiver.ts): approval events are sealed into the chain in outbox order
 * and shipped strictly in order, exactly as stored; a receiver that is down, loses the receipt or answers a
 * wrong one gets the same entry again after the stored backoff (TestClock), and nothing later goes before
 * it; a receiver whose certificate the gateway does not trust gets nothing; retention keeps an approval
 * whose entry is not acknowledged.
 */
import { readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, TestClock } from "effect"
import { Approvals } from "../../../src/approvals/service.js"
import { GENESIS_HASH } from "../../../src/events/archive/format.js"
import { Archive, type ArchiveSettings, ArchiveSettingsTag } from "../../../src/events/archive/service.js"
import { verifyArchiveFile } from "../../../src/events/archive/verify-file.js"
import { ApprovalEventRepo } from "../../../src/store/approval-events.js"
import { ApprovalRepo } from "../../../src/store/approvals.js"
import { ArchiveRepo } from "../../../src/store/archive-entries.js"
import {
  approveAs,
  deployArgs,
  newPeople,
  pendingOf,
  requestWrite,
  sharedApprovalStores
} from "../../support/approval-service.js"
import { newArchiveKey } from "../../support/archive-file.js"
import { type ArchiveReceiver, startArchiveReceiver } from "../../support/archive-receiver.js"
import { storeKinds } from "../../support/databases.js"
import { LogCapture } from "../../support/logs.js"
import { makeTestCa } from "../../support/test-ca.js"

const stores = sharedApprovalStores()
const ca = makeTestCa()
const otherCa = makeTestCa("another CA")
afterAll(async () => {
  await stores.close()
  ca.remove()
  otherCa.remove()
})

const key = newArchiveKey()
const KEY_ID = "audit-test"
const rotatedKey = newArchiveKey()
const ROTATED_KEY_ID = "audit-rotated"
let receiverNumber = 0

/** A receiver for one test, closed with its scope. */
const receiver = (options: { readonly cert?: string; readonly key?: string } = {}) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      startArchiveReceiver(
        ca,
        join(tmpdir(), `archive-receiver-${process.pid}-${receiverNumber++}.jsonl`),
        { [KEY_ID]: key.publicKeyBase64, [ROTATED_KEY_ID]: rotatedKey.publicKeyBase64 },
        options
      )
    ),
    (started) => Effect.promise(() => started.close())
  )

/**
 * Approvals and the Archive over the file's database of `kind`: the archive starts empty, its cursor at
 * the end of the outbox, so a test sees the events it makes and no other's.
 */
const archiveLayer = (kind: (typeof storeKinds)[number], settings: ArchiveSettings) =>
  Archive.Default.pipe(
    Layer.provide(Layer.succeed(ArchiveSettingsTag, settings)),
    Layer.provideMerge(ArchiveRepo.Default),
    Layer.provideMerge(stores.layer(kind)),
    Layer.tap((context) =>
      Effect.gen(function* () {
        const sql = Context.get(context, SqlClient.SqlClient)
        yield* sql`DELETE FROM archive_entries`
        yield* sql`UPDATE archive_cursor SET event_seq = (SELECT seq FROM approval_event_counter WHERE id = 1)`
      }).pipe(Effect.orDie)
    )
  )

const settingsFor = (url: string): ArchiveSettings => ({ url, keyId: KEY_ID, key, ca: ca.caPem })

/** The Archive over the same database as it stands (a restart with other settings): nothing is reset. */
const archiveAgain = (kind: (typeof storeKinds)[number], settings: ArchiveSettings) =>
  Archive.Default.pipe(
    Layer.provide(Layer.succeed(ArchiveSettingsTag, settings)),
    Layer.provideMerge(ArchiveRepo.Default),
    Layer.provideMerge(stores.layer(kind))
  )

/** `count` new approval requests: one `requested` event each. */
const requests = (count: number) =>
  Effect.gen(function* () {
    const people = yield* newPeople
    const ids: Array<string> = []
    for (let index = 0; index < count; index++) {
      ids.push(pendingOf(yield* requestWrite(people.requester.caller, deployArgs(`1.${index}`))).id)
    }
    return { people, ids }
  })

const step = Effect.flatMap(Archive, (archive) => archive.step())
const storedLines = Effect.flatMap(ArchiveRepo, (repo) => repo.lines(1, 1000))
const fileLines = (receiving: ArchiveReceiver) => readFileSync(receiving.file, "utf8").split("\n").filter(Boolean)
const verifies = (receiving: ArchiveReceiver) =>
  Effect.promise(() => verifyArchiveFile(receiving.file, new Map([[KEY_ID, key.publicKeyBase64]]), undefined, 1))

describe.each(storeKinds)("audit archive shipping (%s)", (kind) => {
  it.scoped("seals each approval event into the next entry and ships them in order, exactly as stored", () =>
    Effect.gen(function* () {
      const receiving = yield* receiver()
      yield* Effect.gen(function* () {
        const { people, ids } = yield* requests(2)
        const found = yield* Effect.flatMap(ApprovalRepo, (repo) => repo.findById(ids[0]!))
        if (found._tag === "None") throw new Error("the approval just requested is missing")
        yield* approveAs(people.first, found.value)
        expect(yield* step).toBeUndefined()
        const stored = yield* storedLines
        expect(stored).toHaveLength(4)
        // What the receiver holds is byte for byte what the gateway stored, in order.
        expect(fileLines(receiving)).toEqual(stored)
        expect(yield* verifies(receiving)).toMatchObject({ ok: true, entries: 4 })
        const entries = stored.map((line) => JSON.parse(JSON.parse(line).entry))
        const events = yield* Effect.flatMap(ApprovalEventRepo, (repo) => repo.after(0, 10_000))
        const mine = events.filter((event) => ids.includes(event.approval_id))
        expect(entries.map((entry) => [entry.sequence, entry.event_id, entry.action])).toEqual(
          mine.map((event, index) => [index + 1, event.event_id, event.action])
        )
        expect(entries[0].previous_hash).toBe(GENESIS_HASH)
        const vote = entries.find((entry) => entry.action === "vote")
        expect(vote).toMatchObject({ actor: people.first.user.id, approval_id: ids[0], key_id: KEY_ID })
        expect(vote.evidence).toEqual({ acr: null, method: expect.any(String) })
        expect(vote.intent_hash).toBe(mine[0]!.intent_hash)
        expect(yield* Effect.flatMap(Archive, (archive) => archive.report())).toEqual({
          enabled: true,
          pending: 0,
          failed: 0,
          oldest_pending_age_seconds: null,
          last_error: null
        })
      }).pipe(Effect.provide(archiveLayer(kind, settingsFor(receiving.url))))
    })
  )

  it.scoped(
    "a rotated key: its first entry is logged as approval.archive_key_changed with its sequence, the chain goes on, and each key verifies only its own range",
    () =>
      Effect.gen(function* () {
        const receiving = yield* receiver()
        yield* Effect.gen(function* () {
          yield* requests(2)
          expect(yield* step).toBeUndefined()
        }).pipe(Effect.provide(archiveLayer(kind, settingsFor(receiving.url))))
        const logs = new LogCapture()
        const rotated = { ...settingsFor(receiving.url), keyId: ROTATED_KEY_ID, key: rotatedKey }
        yield* Effect.gen(function* () {
          yield* requests(2)
          expect(yield* logs.capture(step)).toBeUndefined()
          // Nothing changed since: no second line.
          yield* requests(1)
          expect(yield* logs.capture(step)).toBeUndefined()
        }).pipe(Effect.provide(archiveAgain(kind, rotated)))
        expect(logs.events("approval.archive_key_changed")).toEqual([
          expect.objectContaining({ key_id: ROTATED_KEY_ID, previous_key_id: KEY_ID, first_sequence: 3 })
        ])
        const keyIds = fileLines(receiving).map((line) => JSON.parse(JSON.parse(line).entry).key_id)
        expect(keyIds).toEqual([KEY_ID, KEY_ID, ROTATED_KEY_ID, ROTATED_KEY_ID, ROTATED_KEY_ID])
        const verify = (last: number, first: number) =>
          Effect.promise(() =>
            verifyArchiveFile(
              receiving.file,
              new Map([
                [KEY_ID, { publicKey: key.publicKeyBase64, last }],
                [ROTATED_KEY_ID, { publicKey: rotatedKey.publicKeyBase64, first }]
              ]),
              undefined,
              1
            )
          )
        expect(yield* verify(2, 3)).toMatchObject({ ok: true, entries: 5 })
        expect(yield* verify(2, 4)).toMatchObject({ ok: false, line: 3 })
      })
  )

  it.scoped(
    "entries go over one kept-alive connection; one the receiver resets when it is used again is replaced at once, not retried later",
    () =>
      Effect.gen(function* () {
        const receiving = yield* receiver()
        yield* Effect.gen(function* () {
          yield* requests(3)
          expect(yield* step).toBeUndefined()
          expect(fileLines(receiving)).toHaveLength(3)
          expect(receiving.connections).toBe(1)
          receiving.resetReused = true
          yield* requests(2)
          // The first of these meets the reset; it goes again on a new connection, in the same pass.
          expect(yield* step).toBeUndefined()
          expect(receiving.resetReused).toBe(false)
          expect(fileLines(receiving)).toEqual(yield* storedLines)
          expect(fileLines(receiving)).toHaveLength(5)
          expect(receiving.connections).toBe(2)
          expect(yield* Effect.flatMap(Archive, (archive) => archive.report())).toMatchObject({ pending: 0, failed: 0 })
          expect(yield* verifies(receiving)).toMatchObject({ ok: true, entries: 5 })
        }).pipe(Effect.provide(archiveLayer(kind, settingsFor(receiving.url))))
      })
  )

  it.scoped(
    "a receiver that is down: the entry is retried after 5 s, then 10 s (stored), later ones wait behind it",
    () =>
      Effect.gen(function* () {
        const receiving = yield* receiver()
        receiving.down = true
        yield* Effect.gen(function* () {
          yield* requests(3)
          expect(yield* step).toBe(5_000)
          expect(receiving.received).toHaveLength(0)
          const attemptsAfter = (ms: number) =>
            Effect.gen(function* () {
              yield* TestClock.adjust(Duration.millis(ms))
              yield* step
              const next = yield* Effect.flatMap(ArchiveRepo, (repo) => repo.nextUnacknowledged())
              return next?.attempts
            })
          expect(yield* attemptsAfter(4_999)).toBe(1)
          expect(yield* attemptsAfter(1)).toBe(2)
          expect(yield* attemptsAfter(9_999)).toBe(2)
          expect(yield* attemptsAfter(1)).toBe(3)
          const report = yield* Effect.flatMap(Archive, (archive) => archive.report())
          expect(report).toMatchObject({ enabled: true, pending: 3, failed: 1, last_error: "http_503" })
          receiving.down = false
          expect(yield* attemptsAfter(20_000)).toBeUndefined()
          expect(fileLines(receiving)).toEqual(yield* storedLines)
          expect(yield* verifies(receiving)).toMatchObject({ ok: true, entries: 3 })
        }).pipe(Effect.provide(archiveLayer(kind, settingsFor(receiving.url))))
      })
  )

  it.scoped("a receiver holding the sequence with another entry (a restored database) is logged with the way out", () =>
    Effect.gen(function* () {
      const receiving = yield* receiver()
      receiving.holdsAlready(7, "a".repeat(64))
      const logs = new LogCapture()
      yield* logs.capture(
        Effect.gen(function* () {
          yield* requests(1)
          expect(yield* step).toBe(5_000)
        }).pipe(Effect.provide(archiveLayer(kind, settingsFor(receiving.url))))
      )
      expect(receiving.refusals).toEqual(["sequence 1 is held"])
      expect(logs.events("approval.archive_failed")).toEqual([
        expect.objectContaining({
          sequence: 1,
          error: "http_409",
          hint: expect.stringContaining('docs/audit-archive.md, "After restoring a backup"')
        })
      ])
    })
  )

  it.scoped("a lost receipt: the same entry is sent again and the receiver keeps it once", () =>
    Effect.gen(function* () {
      const receiving = yield* receiver()
      receiving.loseReceipt = true
      yield* Effect.gen(function* () {
        yield* requests(2)
        expect(yield* step).toBe(5_000)
        receiving.loseReceipt = false
        yield* TestClock.adjust(Duration.seconds(5))
        expect(yield* step).toBeUndefined()
        // The first entry went twice, identical; the file holds each entry once.
        expect(receiving.received).toHaveLength(3)
        expect(receiving.received[0]).toBe(receiving.received[1])
        expect(fileLines(receiving)).toEqual(yield* storedLines)
      }).pipe(Effect.provide(archiveLayer(kind, settingsFor(receiving.url))))
    })
  )

  it.scoped("a wrong receipt is not an acknowledgement: the entry is retried", () =>
    Effect.gen(function* () {
      const receiving = yield* receiver()
      receiving.wrongReceipt = true
      yield* Effect.gen(function* () {
        yield* requests(2)
        expect(yield* step).toBe(5_000)
        expect(yield* Effect.flatMap(Archive, (archive) => archive.report())).toMatchObject({
          pending: 2,
          failed: 1,
          last_error: "receipt_mismatch"
        })
        receiving.wrongReceipt = false
        yield* TestClock.adjust(Duration.seconds(5))
        expect(yield* step).toBeUndefined()
        expect(receiving.received).toHaveLength(3)
        expect(fileLines(receiving)).toEqual(yield* storedLines)
      }).pipe(Effect.provide(archiveLayer(kind, settingsFor(receiving.url))))
    })
  )

  it.scoped("a receiver whose certificate is not trusted gets nothing: refused at the handshake, retried", () =>
    Effect.gen(function* () {
      const receiving = yield* receiver({ cert: otherCa.cert, key: otherCa.key })
      yield* Effect.gen(function* () {
        yield* requests(1)
        expect(yield* step).toBe(5_000)
        expect(receiving.received).toHaveLength(0)
        expect(yield* Effect.flatMap(Archive, (archive) => archive.report())).toMatchObject({
          pending: 1,
          last_error: "tls"
        })
      }).pipe(Effect.provide(archiveLayer(kind, settingsFor(receiving.url))))
    })
  )

  it.scoped("retention keeps a finished approval whose entry is not acknowledged, and drops it once it is", () =>
    Effect.gen(function* () {
      const receiving = yield* receiver()
      receiving.down = true
      yield* Effect.gen(function* () {
        const { people, ids } = yield* requests(1)
        const approvals = yield* Approvals
        yield* approvals.reject(people.first, ids[0]!)
        yield* step
        const repo = yield* ApprovalRepo
        const later = new Date(Date.now() + 365 * 24 * 3_600_000)
        expect(yield* repo.purge(later, 500)).toBe(0)
        expect((yield* repo.findById(ids[0]!))._tag).toBe("Some")
        receiving.down = false
        yield* TestClock.adjust(Duration.seconds(5))
        yield* step
        expect(yield* repo.purge(later, 500)).toBeGreaterThanOrEqual(1)
        expect((yield* repo.findById(ids[0]!))._tag).toBe("None")
      }).pipe(Effect.provide(archiveLayer(kind, settingsFor(receiving.url))))
    })
  )
})

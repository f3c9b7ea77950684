import type { Table } from "./table.js"

/** A bench suite: a file in bench/ exporting `name` and `run`, listed in `bench/run.ts`. */
export interface Suite {
  /** Short id, used to pick suites: `npm run bench -- <name> …`. */
  readonly name: string
  /** One table, or several when the suite measures more than one thing. */
  readonly run: () => Promise<Table | ReadonlyArray<Table>>
}

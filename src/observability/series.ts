/**
 * Counters and histograms for the request path, exposed through prom-client's registry (which formats and
 * escapes them) but kept here: prom-client hashes and validates the label object on every update, about
 * 4 µs each, where these look label values up one at a time in nested Maps (docs/decisions.md, "Metrics
 * with prom-client"): the values are mostly strings the gateway keeps (a tool's name, a constant), whose
 * hash V8 has already computed, where a key joined from them would be a new string to hash on every
 * update. A series is created on its first update and never removed.
 */

interface Series<T> {
  readonly labels: Readonly<Record<string, string>>
  state: T
}

/** What prom-client's registry reads of a metric (its `get()`); the other members are for its own metrics. */
interface MetricValue {
  readonly labels: Readonly<Record<string, string | number>>
  readonly value: number
  readonly metricName?: string
}

/** One level of the lookup: a label value, then the next level, or the series after the last label. */
type Level<T> = Map<string, Level<T> | Series<T>>

abstract class FastMetric<T> {
  /** Every series, in the order they were created (what the registry reads). */
  protected readonly series: Array<Series<T>> = []
  private index: Level<T> = new Map()
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: ReadonlyArray<string>,
    readonly type: "counter" | "histogram"
  ) {}

  protected seriesOf(values: ReadonlyArray<string>, initial: () => T): Series<T> {
    let level = this.index
    const last = this.labelNames.length - 1
    for (let at = 0; at < last; at++) {
      const value = values[at] ?? ""
      let next = level.get(value) as Level<T> | undefined
      if (next === undefined) {
        next = new Map()
        level.set(value, next)
      }
      level = next
    }
    const value = values[last] ?? ""
    let found = level.get(value) as Series<T> | undefined
    if (found === undefined) {
      const labels: Record<string, string> = {}
      this.labelNames.forEach((name, at) => {
        labels[name] = values[at] ?? ""
      })
      found = { labels, state: initial() }
      level.set(value, found)
      this.series.push(found)
    }
    return found
  }

  protected abstract values(): Array<MetricValue>

  async get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: "sum" as const, values: this.values() }
  }

  reset(): void {
    this.series.length = 0
    this.index = new Map()
  }
}

export class FastCounter extends FastMetric<number> {
  constructor(name: string, help: string, labelNames: ReadonlyArray<string>) {
    super(name, help, labelNames, "counter")
  }

  inc(values: ReadonlyArray<string>, by = 1): void {
    this.seriesOf(values, () => 0).state += by
  }

  protected values(): Array<MetricValue> {
    return this.series.map((series) => ({ labels: series.labels, value: series.state }))
  }
}

interface Buckets {
  /** Per bucket, the observations at most its bound (not cumulative; summed when read). */
  readonly counts: Float64Array
  sum: number
  count: number
}

export class FastHistogram extends FastMetric<Buckets> {
  constructor(
    name: string,
    help: string,
    labelNames: ReadonlyArray<string>,
    private readonly bounds: ReadonlyArray<number>
  ) {
    super(name, help, labelNames, "histogram")
  }

  observe(values: ReadonlyArray<string>, value: number): void {
    const { state } = this.seriesOf(values, () => ({ counts: new Float64Array(this.bounds.length), sum: 0, count: 0 }))
    state.sum += value
    state.count += 1
    for (let at = 0; at < this.bounds.length; at++) {
      if (value <= this.bounds[at]!) {
        state.counts[at]! += 1
        return
      }
    }
  }

  protected values(): Array<MetricValue> {
    return this.series.flatMap(({ labels, state }) => {
      let cumulative = 0
      const buckets = this.bounds.map((bound, at) => {
        cumulative += state.counts[at]!
        return { labels: { ...labels, le: bound }, value: cumulative, metricName: `${this.name}_bucket` }
      })
      return [
        ...buckets,
        { labels: { ...labels, le: "+Inf" }, value: state.count, metricName: `${this.name}_bucket` },
        { labels, value: state.sum, metricName: `${this.name}_sum` },
        { labels, value: state.count, metricName: `${this.name}_count` }
      ]
    })
  }
}

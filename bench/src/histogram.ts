/**
 * A latency histogram in microseconds that merges across rounds and crosses process boundaries
 * as plain data. autocannon's own percentiles are whole milliseconds, too coarse for a p99 of a
 * few ms; this keeps 10 µs resolution up to 100 ms and 1 ms above, up to 10 s.
 */
const FINE_US = 10;
const FINE_LIMIT_US = 100_000;
const COARSE_US = 1_000;
const FINE_BUCKETS = FINE_LIMIT_US / FINE_US;
const BUCKETS = FINE_BUCKETS + (10_000_000 - FINE_LIMIT_US) / COARSE_US;

/** Sparse form for JSON and IPC: [bucket, count] pairs, plus the exact maximum. */
export type HistogramData = { buckets: Array<[number, number]>; count: number; maxUs: number; sumUs: number };

export class LatencyHistogram {
  readonly #counts = new Uint32Array(BUCKETS);
  count = 0;
  maxUs = 0;
  sumUs = 0;

  /** One latency, or `count` requests of the same latency. */
  record(ms: number, count = 1): void {
    const us = ms * 1000;
    const bucket =
      us < FINE_LIMIT_US
        ? Math.floor(us / FINE_US)
        : Math.min(BUCKETS - 1, FINE_BUCKETS + Math.floor((us - FINE_LIMIT_US) / COARSE_US));
    this.#counts[bucket]! += count;
    this.count += count;
    this.sumUs += us * count;
    if (us > this.maxUs) this.maxUs = us;
  }

  add(data: HistogramData): void {
    for (const [bucket, count] of data.buckets) this.#counts[bucket]! += count;
    this.count += data.count;
    this.sumUs += data.sumUs;
    this.maxUs = Math.max(this.maxUs, data.maxUs);
  }

  reset(): void {
    this.#counts.fill(0);
    this.count = 0;
    this.maxUs = 0;
    this.sumUs = 0;
  }

  toData(): HistogramData {
    const buckets: Array<[number, number]> = [];
    this.#counts.forEach((count, bucket) => {
      if (count > 0) buckets.push([bucket, count]);
    });
    return { buckets, count: this.count, maxUs: this.maxUs, sumUs: this.sumUs };
  }

  static from(data: HistogramData): LatencyHistogram {
    const histogram = new LatencyHistogram();
    histogram.add(data);
    return histogram;
  }

  /** The upper edge of the bucket holding the given percentile, in ms (never above the max). */
  percentileMs(percentile: number): number {
    if (this.count === 0) return 0;
    const rank = Math.ceil((percentile / 100) * this.count);
    let seen = 0;
    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      seen += this.#counts[bucket]!;
      if (seen >= rank) {
        const upperUs =
          bucket < FINE_BUCKETS ? (bucket + 1) * FINE_US : FINE_LIMIT_US + (bucket - FINE_BUCKETS + 1) * COARSE_US;
        return Math.min(upperUs, this.maxUs) / 1000;
      }
    }
    return this.maxUs / 1000;
  }

  summary(): LatencySummary {
    return {
      p50: round(this.percentileMs(50)),
      p90: round(this.percentileMs(90)),
      p99: round(this.percentileMs(99)),
      p999: round(this.percentileMs(99.9)),
      max: round(this.maxUs / 1000),
      mean: round(this.count === 0 ? 0 : this.sumUs / this.count / 1000),
    };
  }
}

export type LatencySummary = { p50: number; p90: number; p99: number; p999: number; max: number; mean: number };

const round = (ms: number) => Math.round(ms * 100) / 100;

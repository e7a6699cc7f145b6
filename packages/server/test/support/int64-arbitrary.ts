import { INT64_MAX, INT64_MIN } from "@plantstore/schema";
import fc from "fast-check";

const SAFE = 2n ** 53n;

/**
 * Where int64 ids break code: the bounds, the edge of a double's exact integers, the neighbours
 * of each. Shrinking moves toward the front of this list, so the small ones come first.
 */
const EDGES = [
  0n,
  1n,
  -1n,
  SAFE - 1n,
  -(SAFE - 1n),
  SAFE,
  -SAFE,
  SAFE + 1n,
  -(SAFE + 1n),
  INT64_MAX,
  INT64_MAX - 1n,
  INT64_MIN + 1n,
  INT64_MIN,
];

/** ±2^k and its two neighbours, for k in 0..63, kept inside int64. */
const powerOfTwoOrNeighbour = fc
  .tuple(fc.integer({ min: 0, max: 63 }), fc.boolean(), fc.constantFrom(0n, -1n, 1n))
  .map(([k, negative, step]) => {
    const id = (negative ? -(2n ** BigInt(k)) : 2n ** BigInt(k)) + step;
    return id > INT64_MAX ? INT64_MAX : id < INT64_MIN ? INT64_MIN : id;
  });

/** Any int64, most often one of the values above, so that runs of a few dozen commands meet them. */
export const edgeBiasedInt64: fc.Arbitrary<bigint> = fc.oneof(
  { arbitrary: fc.constantFrom(...EDGES), weight: 6 },
  { arbitrary: powerOfTwoOrNeighbour, weight: 2 },
  { arbitrary: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), weight: 1 },
);

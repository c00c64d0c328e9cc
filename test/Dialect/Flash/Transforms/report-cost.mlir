// Tests of flash-report-cost, an analysis that prints the cost model of each
// flash.attention and leaves the IR unchanged. The inputs are the parts
// below the `//---` markers, written out by split-file.
//
// RUN: split-file %s %t
//
// The seed's worked example: one head, N = 4096, d = 64, f16, M = 51200
// elements (102400 bytes) with the algorithm-1 order (Bc = 200, Br = 64).
// RUN: flashc-opt %t/seed.mlir --flash-report-cost="target=sm_80 sram-bytes=102400 loop-order=algorithm1" \
// RUN:   | FileCheck %s --check-prefix=SEED
// RUN: flashc-opt %t/seed.mlir --flash-report-cost="target=sm_80 sram-bytes=102400 loop-order=algorithm1 json=true" \
// RUN:   | FileCheck %s --check-prefix=SEED-JSON
//
// A causal mask with blocks of 128: T = 32 block rows, 1/2 + 1/64 of them.
// RUN: flashc-opt %t/causal.mlir --flash-report-cost="block-q=128 block-kv=128" \
// RUN:   | FileCheck %s --check-prefix=CAUSAL
// RUN: flashc-opt %t/causal.mlir --flash-report-cost="block-q=128 block-kv=128 json=1" \
// RUN:   | FileCheck %s --check-prefix=CAUSAL-JSON
//
// Decode with GQA on an A100 (the seed's exercise 9): the wave model picks
// 32 splits; 64 splits need two waves and are slower.
// RUN: flashc-opt %t/decode.mlir --flash-report-cost="target=sm_80" \
// RUN:   | FileCheck %s --check-prefix=DECODE
// RUN: flashc-opt %t/decode.mlir --flash-report-cost="target=sm_80 splits=64" \
// RUN:   | FileCheck %s --check-prefix=DECODE64
// RUN: flashc-opt %t/decode.mlir --flash-report-cost="target=sm_80 json=true" \
// RUN:   | FileCheck %s --check-prefix=DECODE-JSON
//
// 2^32 query rows in blocks of one over 8 keys: the causal coverage is
// counted in runs of equal block counts, not one Q block at a time (this
// took minutes). The last 8 rows see 1 + ... + 8 keys, one block each.
// RUN: timeout 60 flashc-opt %t/long-query.mlir \
// RUN:   --flash-report-cost="block-kv=8 loop-order=algorithm1 sram-bytes=64 json=true" \
// RUN:   | FileCheck %s --check-prefix=LONG-Q
//
// Errors.
// RUN: not flashc-opt %t/seed.mlir --flash-report-cost="target=sm_99" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-TARGET
// RUN: not flashc-opt %t/seed.mlir --flash-report-cost="loop-order=fa3" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-ORDER
// RUN: not flashc-opt %t/decode.mlir --flash-report-cost="target=sm_80 splits=600" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-SPLITS
// RUN: not flashc-opt %t/dynamic.mlir --flash-report-cost 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DYNAMIC

// SEED-LABEL: flash.attention #0 in @seed:
// SEED-NEXT:   target          sm_80 (sram 102400 bytes = 51200 elements)
// SEED-NEXT:   shape           B=1 Hq=1 Hkv=1 Nq=4096 Nk=4096 D=64 Dv=64, 2-byte elements, not causal
// SEED-NEXT:   flops           dense 4294967296, causal 4294967296, schedule 4294967296
// SEED-NEXT:   hbm elements    loop order               Br    Bc            reads           writes            total   x model
// SEED-NEXT:                   standard (3 passes)       -     -         34340864         33816576         68157440     50.78
// SEED-NEXT:                   kv-outer (algorithm1)    64   200         11706368          5947392         17653760     13.15  <- schedule
// SEED-NEXT:                   q-outer (fa2)           128    64         17039360           266240         17305600     12.89  <- kernel
// SEED-NEXT:   loop orders     kv-outer reads K, V once but Q, O, l, m once per KV block (21 blocks); q-outer reads Q, writes O once but reads K, V once per Q block (32 blocks)
// SEED-NEXT:   io model        N^2 d^2 / M = 1342177.28 elements
// SEED-NEXT:   schedule        algorithm1, Br=64 Bc=200, 64 x 21 blocks, 1344 of 1344 visited (fraction 1.000000)
// SEED-NEXT:   splits          1
// SEED-NEXT:   wave model      64 CTAs in 1 wave(s)
// The IR is printed unchanged after the report.
// SEED:      func.func @seed(%[[Q:.+]]: tensor<1x1x4096x64xf16>, %[[K:.+]]: tensor<1x1x4096x64xf16>, %[[V:.+]]: tensor<1x1x4096x64xf16>)
// SEED-NEXT:   %[[O:.+]] = flash.attention %[[Q]], %[[K]], %[[V]] : tensor<1x1x4096x64xf16>, tensor<1x1x4096x64xf16>, tensor<1x1x4096x64xf16> -> tensor<1x1x4096x64xf16>
// SEED-NEXT:   return %[[O]]

// JSON objects print with sorted keys.
// SEED-JSON:      "hbmElements": {
// SEED-JSON-NEXT:   "algorithm1": {
// SEED-JSON-NEXT:     "blockKV": 200,
// SEED-JSON-NEXT:     "blockQ": 64,
// SEED-JSON-NEXT:     "ratioToModel": 13.15
// SEED-JSON-NEXT:     "reads": 11706368,
// SEED-JSON-NEXT:     "total": 17653760,
// SEED-JSON-NEXT:     "writes": 5947392
// SEED-JSON:        "model": 1342177.28,
// SEED-JSON-NEXT:   "standard": {
// SEED-JSON-NEXT:     "ratioToModel": 50.78125,
// SEED-JSON-NEXT:     "reads": 34340864,
// SEED-JSON-NEXT:     "total": 68157440,
// SEED-JSON-NEXT:     "writes": 33816576
// SEED-JSON:      "schedule": {
// SEED-JSON-NEXT:   "blockKV": 200,
// SEED-JSON-NEXT:   "blockPairs": 1344,
// SEED-JSON-NEXT:   "blockQ": 64,
// SEED-JSON-NEXT:   "blocksKV": 21,
// SEED-JSON-NEXT:   "blocksQ": 64,
// SEED-JSON:      "sramElements": 51200,
// SEED-JSON:      "target": "sm_80",
// SEED-JSON:      flash.attention

//--- seed.mlir
func.func @seed(%q: tensor<1x1x4096x64xf16>, %k: tensor<1x1x4096x64xf16>,
                %v: tensor<1x1x4096x64xf16>) -> tensor<1x1x4096x64xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<1x1x4096x64xf16>, tensor<1x1x4096x64xf16>, tensor<1x1x4096x64xf16>
      -> tensor<1x1x4096x64xf16>
  return %o : tensor<1x1x4096x64xf16>
}

// On the CPU: splits 1 and no wave model. Causal FLOPs count the
// 4096 * 4097 / 2 visible pairs; the schedule computes 528 blocks.
// CAUSAL-LABEL: flash.attention #0 in @causal:
// CAUSAL:       shape {{.+}}, causal
// CAUSAL-NEXT:  flops           dense 4294967296, causal 2148007936, schedule 2214592512
// CAUSAL:       schedule        fa2, Br=128 Bc=128, 32 x 32 blocks, 528 of 1024 visited (fraction 0.515625)
// CAUSAL-NEXT:  splits          1
// CAUSAL-NOT:   wave model
// CAUSAL:       flash.attention %{{.+}}, %{{.+}}, %{{.+}} causal : tensor<1x1x4096x64xf16>

// CAUSAL-JSON:      "causalBlockFraction": 0.515625,
// CAUSAL-JSON:      "visitedBlockPairs": 528
// CAUSAL-JSON:      "waveModel": null

//--- causal.mlir
func.func @causal(%q: tensor<1x1x4096x64xf16>, %k: tensor<1x1x4096x64xf16>,
                  %v: tensor<1x1x4096x64xf16>) -> tensor<1x1x4096x64xf16> {
  %o = flash.attention %q, %k, %v causal
      : tensor<1x1x4096x64xf16>, tensor<1x1x4096x64xf16>, tensor<1x1x4096x64xf16>
      -> tensor<1x1x4096x64xf16>
  return %o : tensor<1x1x4096x64xf16>
}

// 2 kv heads x 16 splits = 32 CTAs, one wave; the 8 query heads of a group
// padded to one MMA tile of 16 rows (as the runtime models the kernel, so
// both choose 16 splits); bandwidth-bound near reading the KV cache once.
// DECODE-LABEL: flash.attention #0 in @decode:
// DECODE:       schedule        fa2, Br=1 Bc=128, 1 x 512 blocks, 512 of 512 visited (fraction 1.000000)
// DECODE-NEXT:  splits          16
// DECODE-NEXT:  wave model      32 CTAs in 1 wave(s), 16 rows x 4096 keys per CTA, memory-bound at 48.0 GB/s per CTA
// DECODE-NEXT:                  per CTA 43.82 us, combine 0.09 us, 2 kernel(s): predicted 53.91 us
// DECODE-NEXT:                  floor 43.16 us, unsplit FA2 kernel 2128.88 us
// DECODE:       flash.attention %{{.+}}, %{{.+}}, %{{.+}} : tensor<1x16x1x128xf16>, tensor<1x2x65536x128xf16>

// DECODE64:      splits          64
// DECODE64-NEXT: wave model      128 CTAs in 2 wave(s), 16 rows x 1024 keys per CTA, memory-bound at 14.4 GB/s per CTA
// DECODE64-NEXT:                 per CTA 36.84 us, combine 0.34 us, 2 kernel(s): predicted 84.03 us

// DECODE-JSON:      "splits": 16,
// DECODE-JSON:      "waveModel": {
// DECODE-JSON:        "bound": "memory",
// DECODE-JSON:        "ctas": 32,
// DECODE-JSON:        "kernels": 2,
// DECODE-JSON:        "splits": 16,
// DECODE-JSON-NEXT:   "timeUs": 53.90
// DECODE-JSON-NEXT:   "waves": 1

//--- decode.mlir
func.func @decode(%q: tensor<1x16x1x128xf16>, %k: tensor<1x2x65536x128xf16>,
                  %v: tensor<1x2x65536x128xf16>) -> tensor<1x16x1x128xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<1x16x1x128xf16>, tensor<1x2x65536x128xf16>, tensor<1x2x65536x128xf16>
      -> tensor<1x16x1x128xf16>
  return %o : tensor<1x16x1x128xf16>
}

// BAD-TARGET: error: flash-report-cost: unknown target 'sm_99'; known targets: cpu, sm_80, sm_90a
// BAD-ORDER: error: flash-report-cost: unknown loop order 'fa3'; expected fa2 or algorithm1
// BAD-SPLITS: error: flash-report-cost: 600 splits out of range: 65536 keys in blocks of 128 make 512 blocks, and every split needs at least one

// DYNAMIC: error: flash-report-cost needs static sizes: the key length Nk (key dimension 2) of 'tensor<2x4x?x64xf32>' is dynamic

//--- dynamic.mlir
func.func @dynamic(%q: tensor<2x8x1x64xf32>, %k: tensor<2x4x?x64xf32>,
                   %v: tensor<2x4x?x64xf32>) -> tensor<2x8x1x64xf32> {
  %o = flash.attention %q, %k, %v causal
      : tensor<2x8x1x64xf32>, tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>
      -> tensor<2x8x1x64xf32>
  return %o : tensor<2x8x1x64xf32>
}

//--- long-query.mlir
// LONG-Q: "blocksQ": 4294967296
// LONG-Q: "visitedBlockPairs": 8
func.func @long_query(%q: tensor<1x1x4294967296x16xf16>, %k: tensor<1x1x8x16xf16>, %v: tensor<1x1x8x16xf16>) -> tensor<1x1x4294967296x16xf16> {
  %o = flash.attention %q, %k, %v causal : tensor<1x1x4294967296x16xf16>, tensor<1x1x8x16xf16>, tensor<1x1x8x16xf16> -> tensor<1x1x4294967296x16xf16>
  return %o : tensor<1x1x4294967296x16xf16>
}

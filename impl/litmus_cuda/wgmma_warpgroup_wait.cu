// HW-12 (spec/README.md): does one warp's wgmma.wait_group return before a sibling warp of
// its warpgroup has issued its share of the wgmma?  model/wgmma.py says no: the
// warpgroup's k-th wgmma-group is one collective operation (PTX ISA 9.7.15.7.2-3).
//
// One warpgroup (128 threads).  Warp w > 0 spins delay * w cycles before it issues
// wgmma.fence / wgmma.mma_async (m64n8k16, f16 operands from shared memory, f32
// accumulators) / wgmma.commit_group / wgmma.wait_group 0; warp 0 issues at once.  Each
// warp records %clock64 just before its wgmma.fence ("issue") and after its wait
// ("waitdone"), relative to warp 0's issue.  The collective reading predicts, for every
// delay: waitdone of warp 0 >= issue of warp 3.
//
//   nvcc -gencode arch=compute_90a,code=sm_90a -O2 -o wgmma_wait wgmma_warpgroup_wait.cu
//   ./wgmma_wait
//
// Result (spec/hardware.md, section 4): on an H100 every warp's wait returned after the
// last warp issued (warp 0 waited 600,101 cycles for warp 3's issue at 600,041).
#include <cstdint>
#include <cstdio>

__device__ __forceinline__ uint64_t clk() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}

// A shared-memory matrix descriptor without swizzle (start address, leading and stride
// byte offsets >> 4); the product's value is not what this test looks at.
__device__ __forceinline__ uint64_t desc(const void* p) {
  uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
  uint64_t d = (uint64_t)((a & 0x3FFFF) >> 4);
  d |= (uint64_t)(128 >> 4) << 16;
  d |= (uint64_t)(256 >> 4) << 32;
  return d;
}

__global__ void warpgroup_wait(unsigned long long* out, int delay, float* sink) {
  __shared__ __align__(128) uint16_t A[64 * 16];
  __shared__ __align__(128) uint16_t B[16 * 8];
  int t = threadIdx.x, w = t / 32;
  for (int i = t; i < 64 * 16; i += 128) A[i] = 0x3c00;  // 1.0 in f16
  for (int i = t; i < 16 * 8; i += 128) B[i] = 0x3c00;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  uint64_t da = desc(A), db = desc(B);
  if (w != 0) {
    uint64_t s = clk();
    while (clk() - s < (uint64_t)delay * w) {
    }
  }
  uint64_t ti = clk();
  asm volatile(
      "wgmma.fence.sync.aligned;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, %4, %5, 0, 1, 1, 0, 0;\n"
      "wgmma.commit_group.sync.aligned;\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "l"(da), "l"(db)
      : "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)::"memory");
  uint64_t tw = clk();
  if ((t & 31) == 0) {
    out[w * 2] = ti;
    out[w * 2 + 1] = tw;
  }
  sink[t] = d0 + d1 + d2 + d3;
}

int main() {
  unsigned long long* o;
  float* s;
  cudaMalloc(&o, 64);
  cudaMalloc(&s, 512);
  int ok = 1;
  for (int r = 0; r < 5; r++) {
    int delay = 200000 * r;
    warpgroup_wait<<<1, 128>>>(o, delay, s);
    cudaError_t e = cudaDeviceSynchronize();
    unsigned long long h[8];
    cudaMemcpy(h, o, 64, cudaMemcpyDeviceToHost);
    printf("delay=%d err=%s |", delay, cudaGetErrorString(e));
    for (int w = 0; w < 4; w++)
      printf(" w%d issue=%lld waitdone=%lld", w, (long long)(h[w * 2] - h[0]),
             (long long)(h[w * 2 + 1] - h[0]));
    printf("\n");
    ok &= e == cudaSuccess && h[1] >= h[6];
  }
  printf("%s\n", ok ? "collective: warp 0's wait returned after warp 3 issued, every run"
                    : "NOT collective in some run");
  return ok ? 0 : 1;
}

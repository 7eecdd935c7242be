// Where the H200 puts thread blocks (issue 6, session 17): which SMs share a GPC, and on which SM each
// block of a one-block-per-SM launch lands. The long-K GEMMs are bound by L2 read sectors, and the GPC's
// request coalescing only merges reads of blocks on the same GPC, so a tile order is only as good as
// the SMs its neighbouring tiles land on.
//
//   nvcc -O2 -std=c++17 -arch=sm_90a scripts/sm_placement_probe.cu -o /tmp/sm_placement_probe
//   /tmp/sm_placement_probe [blocks]     (blocks: the plain launch's grid, 128 by default)
//
// GPCs: clusters of the largest size the driver allows are launched, one block per SM (a large shared
// memory request keeps a second block off); the blocks of one cluster share a GPC, so every SM id
// seen in one cluster belongs to the same group. Then a plain launch of `blocks` blocks with the same
// shared memory: block -> SM -> GPC group.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#define CHECK(x)                                                                        \
  do {                                                                                  \
    cudaError_t e = (x);                                                                \
    if (e != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s: %s (line %d)\n", #x, cudaGetErrorString(e), __LINE__); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__device__ __forceinline__ unsigned smid() {
  unsigned v;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(v));
  return v;
}

__device__ __forceinline__ unsigned cluster_id() {
  unsigned v;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(v));
  return v;
}

// Each block records its SM and its cluster, then spins a little so that all blocks are resident at
// once (a block finishing early would free its SM for a later one and blur the picture).
__global__ void record(int* sm_of_block, int* cluster_of_block, long long spin) {
  extern __shared__ unsigned char pad[];
  if (threadIdx.x == 0) {
    pad[0] = 1;
    sm_of_block[blockIdx.x] = (int)smid();
    cluster_of_block[blockIdx.x] = (int)cluster_id();
    const long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
  }
}

int main(int argc, char** argv) {
  const int plain_blocks = argc > 1 ? std::atoi(argv[1]) : 128;
  int dev = 0, sms = 0, smem_optin = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const int smem = smem_optin - 1024;  // one block per SM
  CHECK(cudaFuncSetAttribute(record, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(record, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));

  // The largest cluster the driver will place, then as many of them as fit at once.
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  cfg.blockDim = dim3(32);
  cfg.dynamicSmemBytes = smem;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int best = 0, clusters = 0;
  for (int size = 16; size >= 1; --size) {
    attr[0].val.clusterDim.x = size;
    attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(size);
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, record, &cfg) == cudaSuccess && n > 0) {
      best = size;
      clusters = n;
      break;
    }
    cudaGetLastError();
  }
  if (best == 0) {
    std::fprintf(stderr, "no cluster size fits\n");
    return 1;
  }
  int *sm_of, *cl_of;
  const int cap = sms * 4;
  CHECK(cudaMalloc(&sm_of, cap * sizeof(int)));
  CHECK(cudaMalloc(&cl_of, cap * sizeof(int)));
  std::map<int, int> group_of_sm;  // SM id -> group (GPC) number
  std::vector<std::set<int>> groups;
  // Several rounds: a GPC with more SMs than one cluster shows up as parts, merged by shared SMs
  // across rounds (the placement differs from launch to launch); smaller clusters fill the rest.
  for (int size = best; size >= 2; size /= 2) {
    attr[0].val.clusterDim.x = size;
    cfg.gridDim = dim3(size);
    int n = 0;
    CHECK(cudaOccupancyMaxActiveClusters(&n, record, &cfg));
    for (int round = 0; round < 8; ++round) {
      cfg.gridDim = dim3(size * n);
      CHECK(cudaLaunchKernelEx(&cfg, record, sm_of, cl_of, 2000000LL));
      CHECK(cudaDeviceSynchronize());
      std::vector<int> sm(size * n), cl(size * n);
      CHECK(cudaMemcpy(sm.data(), sm_of, sm.size() * sizeof(int), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(cl.data(), cl_of, cl.size() * sizeof(int), cudaMemcpyDeviceToHost));
      std::map<int, std::set<int>> by_cluster;
      for (size_t b = 0; b < sm.size(); ++b) by_cluster[cl[b]].insert(sm[b]);
      for (auto& kv : by_cluster) {  // union: the cluster's SMs join one group
        std::set<int> ids;
        for (int s : kv.second)
          if (group_of_sm.count(s)) ids.insert(group_of_sm[s]);
        std::set<int> merged = kv.second;
        for (int g : ids) merged.insert(groups[g].begin(), groups[g].end());
        for (int g : ids) groups[g].clear();
        groups.push_back(merged);
        for (int s : merged) group_of_sm[s] = (int)groups.size() - 1;
      }
    }
  }
  std::vector<std::set<int>> gpcs;
  for (auto& g : groups)
    if (!g.empty()) gpcs.push_back(g);
  std::map<int, int> gpc_of_sm;
  for (size_t g = 0; g < gpcs.size(); ++g)
    for (int s : gpcs[g]) gpc_of_sm[s] = (int)g;
  std::printf("SMs %d, largest cluster %d (%d at once), GPC groups %zu\n", sms, best, clusters, gpcs.size());
  for (size_t g = 0; g < gpcs.size(); ++g) {
    std::printf("gpc %zu (%zu SMs):", g, gpcs[g].size());
    for (int s : gpcs[g]) std::printf(" %d", s);
    std::printf("\n");
  }

  // The plain launch: one block per SM, no cluster.
  CHECK(cudaMemset(cl_of, 0, cap * sizeof(int)));
  record<<<plain_blocks, 32, smem>>>(sm_of, cl_of, 2000000LL);
  CHECK(cudaDeviceSynchronize());
  std::vector<int> sm(plain_blocks);
  CHECK(cudaMemcpy(sm.data(), sm_of, sm.size() * sizeof(int), cudaMemcpyDeviceToHost));
  std::printf("plain launch of %d blocks: block:sm:gpc\n", plain_blocks);
  for (int b = 0; b < plain_blocks; ++b)
    std::printf("%d:%d:%d%s", b, sm[b], gpc_of_sm.count(sm[b]) ? gpc_of_sm[sm[b]] : -1, b % 16 == 15 ? "\n" : " ");
  std::printf("\n");
  return 0;
}

#!/usr/bin/env python3
# The batch starts of llm.c's DataLoader (llmc/dataloader.h: dataloader_reset / _advance_ / _next_batch) with
# its MT19937 (llmc/rand.h: manual_seed, randint32, random_permutation), transcribed from llm.c's C code and
# independent of the toolkit's BatchOrder (std::mt19937): the expected values of tests/train/data_test.cpp's
# "data.order sequential / llmc" case. Prints them; no arguments.
class MT:
    def __init__(self, seed):
        self.s = [0]*624; self.s[0] = seed & 0xffffffff
        for j in range(1, 624):
            self.s[j] = (1812433253 * (self.s[j-1] ^ (self.s[j-1] >> 30)) + j) & 0xffffffff
        self.left = 1; self.next = 0
    def next_state(self):
        N, M = 624, 397; s = self.s; A = [0, 0x9908b0df]
        self.left = N; self.next = 0
        for j in range(N - M):
            y = (s[j] & 0x80000000) | (s[j+1] & 0x7fffffff); s[j] = s[j+M] ^ (y >> 1) ^ A[y & 1]
        for j in range(N - M, N - 1):
            y = (s[j] & 0x80000000) | (s[j+1] & 0x7fffffff); s[j] = s[j+M-N] ^ (y >> 1) ^ A[y & 1]
        y = (s[N-1] & 0x80000000) | (s[0] & 0x7fffffff); s[N-1] = s[M-1] ^ (y >> 1) ^ A[y & 1]
    def randint32(self):
        self.left -= 1
        if self.left <= 0: self.next_state()
        y = self.s[self.next]; self.next += 1
        y ^= y >> 11; y ^= (y << 7) & 0x9d2c5680; y ^= (y << 15) & 0xefc60000; y ^= y >> 18
        return y & 0xffffffff
def perm(a, rng):
    for i in range(len(a)-1, 0, -1):
        j = rng.randint32() % (i+1); a[i], a[j] = a[j], a[i]
def order(sizes, B, T, shuffle, rank, P, n):
    begins = [sum(sizes[:i]) for i in range(len(sizes))]
    total = P*B*T
    rng = MT(42 + rank); shard_idx = list(range(len(sizes)))
    st = {}
    def load(i):
        k = shard_idx[i] if shuffle else i
        st['k'] = k; st['ns'] = (sizes[k] - 1) // total
    def intra():
        st['intra'] = list(range(st['ns'])); perm(st['intra'], rng)
    def reset():
        st['cur'] = 0; st['smp'] = 0
        if shuffle: perm(shard_idx, rng)
        load(0)
        if shuffle: intra()
    def advance():
        if st['cur'] == len(sizes) - 1: reset(); return
        st['cur'] += 1; st['smp'] = 0; load(st['cur'])
        if shuffle: intra()
    reset(); out = []
    for _ in range(n):
        if st['smp'] >= st['ns']: advance()
        idx = st['intra'][st['smp']] if shuffle else st['smp']
        out.append(begins[st['k']] + idx*total + rank*B*T); st['smp'] += 1
    return out
m = MT(42); print("mt42", [m.randint32() for _ in range(3)])
print("seq", order([25, 20, 33], 2, 4, False, 0, 1, 12))
print("llmc", order([25, 20, 33], 2, 4, True, 0, 1, 20))
print("llmc_r1", order([33, 20, 33], 2, 4, True, 1, 2, 12))

# The harness: plugins that are slow, start helper processes, hang or crash.
# Each ctest's TIMEOUT is the proof that the run does not stall: a few times
# what it takes, far below what waiting out a hang or a helper would cost.

# Correct, 0.65 s per kernel and per synchronization: each test takes about
# 2 s, twice --timeout, and the group 14 s; limits per test, calibrated to the
# measured round trip (1 s + 100 x 1.3 s), certify it.
oar_add_defect(slow FILTER "ops/relu/f32/*" EXPECT clean ARGS --timeout 1 TIMEOUT 300 LIGHT)
# Correct, with helper processes that inherit the result pipe and outlive
# every test process: no wait for them, none left behind.
oar_add_defect(helper_process FILTER "abi/streams/*,ops/relu/f32/*" EXPECT clean
               NO_PROCESS_LEFT oar-helper TIMEOUT 120 LIGHT)
# A kernel that never returns on one shape: that test times out, the others
# of its group pass in a fresh process.
oar_add_defect(hang_kernel FILTER "ops/sigmoid/f32/*" EXPECT not_certified AREA ops
               OPS sigmoid DTYPE f32 ID_REGEX "13x31" STATUS timeout ARGS --timeout 3 TIMEOUT 90 LIGHT)
# A kernel that crashes on rank-4 inputs: that test is crashed (SIGSEGV).
oar_add_defect(crash_kernel FILTER "ops/exp/f32/*" EXPECT not_certified AREA ops OPS exp
               DTYPE f32 ID_REGEX "rank4" STATUS crashed TIMEOUT 90)
# device_close never returns: every test passes, then closing the device
# times out as <group>/shutdown.
oar_add_defect(hang_close FILTER "ops/relu/f32/*" EXPECT not_certified AREA abi
               ID_REGEX "^ops/relu/shutdown$" STATUS timeout ARGS --timeout 3 TIMEOUT 90 LIGHT)

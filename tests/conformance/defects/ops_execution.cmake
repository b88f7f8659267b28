# Operator kernels that run out of stream order, share state between streams,
# or write outside their outputs (conformance/suites/ops/stream_order.cc and
# the guard bytes of conformance/suites/ops/op_runner.cc). Each one gives
# right results one call at a time on an idle stream.

# Out of stream order: caught by ops/<op>/<dtype>/behind_a_gate and
# behind_an_event.
# Every kernel runs when dispatched, on the calling thread.
oar_add_defect(kernels_at_dispatch FILTER "ops/*/f32/behind_a_gate" EXPECT not_certified
               AREA ops DTYPE f32 ID_REGEX "/behind_a_gate$")
# Every kernel runs on one compute queue of the plugin, unordered with its stream.
oar_add_defect(kernels_on_compute_queue FILTER "ops/*/f32/behind_an_event" EXPECT not_certified
               AREA ops DTYPE f32 ID_REGEX "/behind_an_event$")
# The reductions copy their inputs at dispatch, compute in stream order.
oar_add_defect(reads_inputs_at_dispatch
               FILTER "ops/sum/*/behind_a_gate,ops/argmax/*/behind_a_gate,ops/add/*/behind_a_gate"
               EXPECT not_certified AREA ops OPS "sum|argmax" ID_REGEX "/behind_a_gate$")
# matmul and conv2d clear their output at dispatch, compute in stream order.
oar_add_defect(zeroes_output_at_dispatch
               FILTER "ops/matmul/*/behind_a_gate,ops/conv2d/*/behind_a_gate"
               EXPECT not_certified AREA ops OPS "matmul|conv2d" ID_REGEX "/behind_a_gate$")

# State shared between streams: caught by ops/<op>/<dtype>/concurrent_streams
# (a race: each selection holds enough tests that all of them missing it is
# out of the question).
# Every kernel stages its output in one buffer of the plugin.
oar_add_defect(shared_staging
               FILTER "ops/add/*/concurrent_streams,ops/exp/*/concurrent_streams,ops/sum/*/concurrent_streams,ops/softmax/*/concurrent_streams"
               EXPECT not_certified AREA ops ID_REGEX "/concurrent_streams$")
# matmul packs its second operand into one workspace of the plugin.
oar_add_defect(shared_pack_workspace FILTER "ops/matmul/*/concurrent_streams"
               EXPECT not_certified AREA ops OPS matmul ID_REGEX "/concurrent_streams$")

# Writes outside the outputs: caught by the guard bytes of every op case.
oar_add_defect(past_end FILTER "ops/add/f32/*,ops/sum/f32/*,ops/matmul/f32/*"
               EXPECT not_certified AREA ops DTYPE f32 ID_REGEX "/(prime_13x31|axis0_13x31|square_64)$")
oar_add_defect(before_start FILTER "ops/add/f32/*,ops/sum/f32/*,ops/matmul/f32/*"
               EXPECT not_certified AREA ops DTYPE f32 ID_REGEX "/(prime_13x31|axis0_13x31|square_64)$")
# Elementwise kernels store whole vectors of 8 past the end.
oar_add_defect(vector_tail FILTER "ops/exp/f32/*,ops/mul/f32/*" EXPECT not_certified AREA ops
               OPS "exp|mul" DTYPE f32 ID_REGEX "/(odd_7|prime_13x31)$")
# softmax, log_softmax, layer_norm and rms_norm use their input as scratch.
oar_add_defect(clobbers_input FILTER "ops/softmax/f32/*,ops/layer_norm/f32/*"
               EXPECT not_certified AREA ops OPS "softmax|layer_norm" DTYPE f32)
# f32 sum and matmul add their result to what the output held.
oar_add_defect(accumulates_into_output FILTER "ops/sum/f32/*,ops/matmul/f32/*"
               EXPECT not_certified AREA ops OPS "sum|matmul" DTYPE f32)

# Correct but awkward: the execution tests must certify them.
# Every kernel call takes 0.65 s before it queues the kernel.
oar_add_defect(slow_launch FILTER "ops/relu/f32/behind_*,ops/relu/f32/concurrent_streams"
               EXPECT clean TIMEOUT 300 LIGHT)
# Every kernel call waits for its stream, runs the kernel and waits for it.
oar_add_defect(synchronous_kernels
               FILTER "ops/relu/f32/behind_*,ops/relu/f32/concurrent_streams,ops/relu/f32/prime*"
               EXPECT clean TIMEOUT 300)

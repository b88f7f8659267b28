# The cuda plugin's `oar list` cases against the fake driver ${FAKE}, after
# the absent-driver case; included by plugins/common/tests/check_oar_list.cmake,
# which defines oar_list() and expect().
oar_list(text OAR_CUDA_DRIVER=${FAKE} OAR_CUDA_FAKE_INIT_ERROR=999)
expect("${text}" "cuda: cuInit failed: CUDA_ERROR_UNKNOWN")
oar_list(text OAR_CUDA_DRIVER=${FAKE} OAR_CUDA_FAKE_DEVICES=0)
expect("${text}" "cuda: no device \\(cuInit: CUDA_ERROR_NO_DEVICE\\)")
oar_list(text OAR_CUDA_DRIVER=${FAKE} OAR_CUDA_FAKE_DEVICES=2)
expect("${text}" "cuda +loaded[^\n]* 2 device\\(s\\)")
expect("${text}" "cuda:1 +OAR fake CUDA device 1 \\(no GPU\\) \\| gpu \\| 1.0 GiB")

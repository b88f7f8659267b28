# The hip plugin's `oar list` cases against the fake runtime ${FAKE} (ARCH: a
# gfx target the plugin was built for), after the absent-runtime case;
# included by plugins/common/tests/check_oar_list.cmake, which defines
# oar_list() and expect().
oar_list(text OAR_HIP_RUNTIME=${FAKE} OAR_HIP_FAKE_INIT_ERROR=35)
expect("${text}" "hip: hipInit failed: hipErrorInsufficientDriver")
oar_list(text OAR_HIP_RUNTIME=${FAKE} OAR_HIP_FAKE_DEVICES=0)
expect("${text}" "hip: no device \\(hipInit: hipErrorNoDevice\\)")
oar_list(text OAR_HIP_RUNTIME=${FAKE} OAR_HIP_FAKE_DEVICES=1 OAR_HIP_FAKE_ARCH=gfx000)
expect("${text}" "hip: device 0 skipped: OAR fake HIP device 0 \\(no GPU\\) is gfx000")
expect("${text}" "hip +loaded[^\n]* 0 device\\(s\\)")
oar_list(text OAR_HIP_RUNTIME=${FAKE} OAR_HIP_FAKE_DEVICES=2 OAR_HIP_FAKE_ARCH=${ARCH})
expect("${text}" "hip +loaded[^\n]* 2 device\\(s\\)")
expect("${text}" "hip:1 +OAR fake HIP device 1 \\(no GPU\\) \\| gpu \\| 1.0 GiB")

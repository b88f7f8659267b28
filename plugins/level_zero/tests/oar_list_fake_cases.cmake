# The level_zero plugin's `oar list` cases against the fake loader ${FAKE},
# after the absent-loader case; included by
# plugins/common/tests/check_oar_list.cmake, which defines oar_list() and expect().
oar_list(text OAR_LEVEL_ZERO_LOADER=${FAKE} OAR_ZE_FAKE_INIT_RESULT=0x78000001)
expect("${text}" "level_zero: zeInit failed: ZE_RESULT_ERROR_UNINITIALIZED")
oar_list(text OAR_LEVEL_ZERO_LOADER=${FAKE} OAR_ZE_FAKE_DEVICES=2)
expect("${text}" "level_zero +loaded[^\n]* 2 device\\(s\\)")
expect("${text}" "level_zero:1 +OAR fake Level Zero device 1 \\(no GPU\\)")

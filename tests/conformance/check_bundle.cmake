# The bundle from end to end, through the command line: keygen, a run with
# --bundle, verify; then a bundle altered with `cmake -E tar` (a member, the
# manifest, the signature), another key and another library must each fail
# with a message that names what is wrong.
# cmake -DOAR_CONFORM=<exe> -DPLUGIN=<manifest> -DOTHER_LIBRARY=<a library>
#       -DWORK_DIR=<dir> -P check_bundle.cmake
foreach(var OAR_CONFORM PLUGIN OTHER_LIBRARY WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_bundle.cmake needs -D${var}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(key "${WORK_DIR}/keys/signing.pem")
set(public_key "${WORK_DIR}/keys/signing.pub.pem")
set(bundle "${WORK_DIR}/cpu.tar.gz")

# Runs oar-conform with ARGN; fails unless it exits |expected_rc| and its
# output matches |expected_text|.
function(expect_run expected_rc expected_text)
  execute_process(COMMAND "${OAR_CONFORM}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  list(JOIN ARGN " " shown)
  if(NOT rc EQUAL expected_rc OR NOT "${out}${err}" MATCHES "${expected_text}")
    message(FATAL_ERROR "oar-conform ${shown}: expected exit ${expected_rc} and "
                        "'${expected_text}', got exit ${rc}:\n${out}\n${err}")
  endif()
  message(STATUS "oar-conform ${shown}: exit ${rc} as expected")
endfunction()

# Repacks the unpacked bundle in |dir| into |archive|.
function(repack dir archive)
  file(GLOB members RELATIVE "${dir}" "${dir}/*")
  execute_process(COMMAND ${CMAKE_COMMAND} -E tar czf "${archive}" ${members}
                  WORKING_DIRECTORY "${dir}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cmake -E tar czf ${archive} failed")
  endif()
endfunction()

function(unpack archive dir)
  file(REMOVE_RECURSE "${dir}")
  file(MAKE_DIRECTORY "${dir}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E tar xzf "${archive}" WORKING_DIRECTORY "${dir}"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cmake -E tar xzf ${archive} failed")
  endif()
endfunction()

expect_run(0 "fingerprint: [0-9a-f]+" keygen --signing-key "${key}")
expect_run(2 "exists" keygen --signing-key "${key}")
# --bundle without a key stops before the run.
expect_run(2 "make one with `oar-conform keygen`" --plugin "${PLUGIN}" --filter "abi/streams/*"
           --report "${WORK_DIR}/report" --bundle "${bundle}"
           --signing-key "${WORK_DIR}/no-such-key.pem")
expect_run(0 "bundle: " --plugin "${PLUGIN}" --filter "abi/streams/*"
           --report "${WORK_DIR}/report" --bundle "${bundle}" --signing-key "${key}")

expect_run(0 "valid.*the key given with --key.*is the library certified"
           verify "${bundle}" --key "${public_key}" --plugin "${PLUGIN}")
expect_run(0 "pass --key to check who signed it" verify "${bundle}")
expect_run(1 "is not the one certified" verify "${bundle}" --plugin "${OTHER_LIBRARY}")

unpack("${bundle}" "${WORK_DIR}/unpacked")
# An untouched repack still verifies: the check is of contents, not of bytes.
repack("${WORK_DIR}/unpacked" "${WORK_DIR}/same.tar.gz")
expect_run(0 "valid" verify "${WORK_DIR}/same.tar.gz" --key "${public_key}")

foreach(case report manifest signature)
  unpack("${bundle}" "${WORK_DIR}/${case}")
  if(case STREQUAL "report")
    file(READ "${WORK_DIR}/${case}/report.json" text)
    string(REPLACE "\"verdict\": \"partial\"" "\"verdict\": \"certified\"" text "${text}")
    file(WRITE "${WORK_DIR}/${case}/report.json" "${text}")
    set(message "member report.json was altered")
  elseif(case STREQUAL "manifest")
    # The junit.xml line dropped: a manifest that no longer lists a member.
    file(READ "${WORK_DIR}/${case}/MANIFEST" text)
    string(REGEX REPLACE "[0-9a-f]+  junit.xml\n" "" text "${text}")
    file(WRITE "${WORK_DIR}/${case}/MANIFEST" "${text}")
    set(message "signature does not match MANIFEST")
  else()
    file(READ "${WORK_DIR}/${case}/MANIFEST.sig" text)
    string(SUBSTRING "${text}" 0 1 first)
    if(first STREQUAL "A")
      set(replacement "B")
    else()
      set(replacement "A")
    endif()
    string(REGEX REPLACE "^." "${replacement}" text "${text}")
    file(WRITE "${WORK_DIR}/${case}/MANIFEST.sig" "${text}")
    set(message "signature does not match MANIFEST")
  endif()
  repack("${WORK_DIR}/${case}" "${WORK_DIR}/${case}.tar.gz")
  expect_run(1 "${message}" verify "${WORK_DIR}/${case}.tar.gz" --key "${public_key}")
endforeach()

# Another signer's key.
expect_run(0 "fingerprint" keygen --signing-key "${WORK_DIR}/keys/other.pem")
expect_run(1 "not the trusted key" verify "${bundle}" --key "${WORK_DIR}/keys/other.pub.pem")
expect_run(2 "not a readable bundle|cannot open" verify "${PLUGIN}")

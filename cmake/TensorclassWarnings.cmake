# Project code compiles warning-free with these; third-party headers come in as
# SYSTEM include directories (imported targets) and are not checked.
function(tensorclass_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
endfunction()

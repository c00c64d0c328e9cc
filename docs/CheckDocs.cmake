# Fails when a checked-in generated doc differs from the one the build made.
foreach(doc ${DOCS})
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E compare_files
      ${GENERATED_DIR}/${doc} ${CHECKED_IN_DIR}/${doc}
    RESULT_VARIABLE differs)
  if(differs)
    message(FATAL_ERROR "docs/${doc} is out of date with the .td files; "
                        "run `ninja -C build flashc-update-docs`")
  endif()
endforeach()
message(STATUS "generated docs are up to date")

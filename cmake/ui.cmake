# The web dashboard (docs/dashboard.md): ui/*.html, *.css, *.js compiled into target at build time
# (cmake/ui_embed.cmake), so the server serves them with nothing on disk and nothing downloaded.
function(xpool_embed_ui target)
  file(GLOB assets CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/ui/*.html ${CMAKE_SOURCE_DIR}/ui/*.css
       ${CMAKE_SOURCE_DIR}/ui/*.js)
  list(SORT assets)
  set(out ${CMAKE_BINARY_DIR}/ui_assets.c)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DHEADER=${CMAKE_SOURCE_DIR}/src/server/ui_assets.h
            "-DASSETS=${assets}" -P ${CMAKE_SOURCE_DIR}/cmake/ui_embed.cmake
    DEPENDS ${assets} ${CMAKE_SOURCE_DIR}/cmake/ui_embed.cmake ${CMAKE_SOURCE_DIR}/src/server/ui_assets.h
    COMMENT "Embedding the dashboard's assets" VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()

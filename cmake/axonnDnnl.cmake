# oneDNN as the imported target axonn::dnnl, for the build and for the installed package alike. oneDNN's own CMake
# config drags in OpenCL; the library and header are all we need.
if(NOT TARGET axonn::dnnl)
  find_library(DNNL_LIBRARY NAMES dnnl REQUIRED)
  find_path(DNNL_INCLUDE_DIR NAMES oneapi/dnnl/dnnl.h REQUIRED)
  add_library(axonn::dnnl UNKNOWN IMPORTED)
  set_target_properties(axonn::dnnl PROPERTIES IMPORTED_LOCATION ${DNNL_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${DNNL_INCLUDE_DIR})
endif()

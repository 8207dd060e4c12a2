# Debian packages from one build (cpack -G DEB in a build configured with
# -DCMAKE_INSTALL_PREFIX=/usr; etc/packaging/README.md):
#   librailyard0     the shared library               (component lib)
#   librailyard-dev  headers, static library, pkg-config, CMake package,
#                    API man pages                     (component dev)
#   railyard         the railyard tool, railyard-objd/-obj, the systemd
#                    unit and its user, the example config (railyard)
# librailyard0 carries a shlibs file (dependants get ">= this version");
# every package's library dependencies come from dpkg-shlibdeps.
# cpack -G RPM builds the same split where rpmbuild is installed.
set(CPACK_PACKAGE_NAME railyard)
set(CPACK_PACKAGE_VENDOR "railyard")
set(CPACK_PACKAGE_CONTACT "railyard developers <railyard@localhost>")
# Each package's description is its own (first line: the summary);
# CPACK_PACKAGE_DESCRIPTION_SUMMARY stays unset, or CPack puts it first.
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_COMPONENTS_ALL lib dev railyard)
set(CPACK_STRIP_FILES OFF)

# ---- DEB ----
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.invalid/railyard")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME librailyard${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_DESCRIPTION
	"fault-tolerant multi-rail RDMA transport - shared library
railyard stripes RDMA writes, reads and messages over several rails
(verbs devices, or the userspace soft rail over UDP) and replays what a
failed rail had in flight on the others.")
# A shlibs control file: packages built against librailyard0 depend on
# librailyard0 (>= the version they were built with).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME librailyard-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION
	"fault-tolerant multi-rail RDMA transport - development files
Headers, the static library, railyard.pc, the CMake package
(find_package(railyard)) and the API man pages.")
# The static library's and railyard.pc's private requirements.
set(_dev_depends "librailyard${PROJECT_VERSION_MAJOR} (= ${PROJECT_VERSION})")
string(APPEND _dev_depends ", libconfuse-dev, libsodium-dev, pkg-config")
if(RY_WITH_VERBS)
	string(APPEND _dev_depends
		", libibverbs-dev, librdmacm-dev, libibumad-dev")
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ${_dev_depends})
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)

set(CPACK_DEBIAN_RAILYARD_PACKAGE_NAME railyard)
set(CPACK_DEBIAN_RAILYARD_DESCRIPTION
	"fault-tolerant multi-rail RDMA transport - tools and daemon
The railyard tool (serve, bench, drill, demo, status, reload), the
reference object server railyard-objd and its client, a hardened
systemd unit and the commented example config.")
# postinst makes the railyard user and reloads systemd; the config is a
# conffile, so an edited one survives upgrades and goes only on purge.
set(_deb ${PROJECT_BINARY_DIR}/deb-control)
file(MAKE_DIRECTORY ${_deb})
configure_file(${PROJECT_SOURCE_DIR}/etc/packaging/deb/postinst
	${_deb}/postinst @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/etc/packaging/deb/postrm
	${_deb}/postrm @ONLY)
file(WRITE ${_deb}/conffiles "${RY_CONF_DIR}/railyard.conf\n")
set(CPACK_DEBIAN_RAILYARD_PACKAGE_CONTROL_EXTRA
	${_deb}/postinst ${_deb}/postrm ${_deb}/conffiles)
set(CPACK_DEBIAN_RAILYARD_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# ---- RPM (when rpmbuild exists) ----
set(CPACK_RPM_COMPONENT_INSTALL ON)
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_LICENSE "BSD-2-Clause")
set(CPACK_RPM_LIB_PACKAGE_NAME librailyard${PROJECT_VERSION_MAJOR})
set(CPACK_RPM_DEV_PACKAGE_NAME librailyard-devel)
set(CPACK_RPM_RAILYARD_PACKAGE_NAME railyard)
set(CPACK_RPM_DEV_PACKAGE_REQUIRES "librailyard${PROJECT_VERSION_MAJOR} = ${PROJECT_VERSION}")

include(CPack)

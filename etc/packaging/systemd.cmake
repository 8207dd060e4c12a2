# The systemd unit, generated with the install's real paths, and the
# sysusers.d entry for the user it runs as (etc/railyard.service.in).
#
# Where they go: with the prefix /usr (distribution packages), the
# directories the systemd.pc of this machine names (/lib/systemd/system
# and /usr/lib/sysusers.d on Debian 12); under any other prefix
# PREFIX/lib/systemd/system (systemd reads /usr/local/lib/systemd/system
# too) and PREFIX/lib/sysusers.d, so that an install to a scratch prefix
# writes nothing outside it.  RY_SYSTEMD_UNITDIR and RY_SYSUSERSDIR set
# them by hand.
set(_unitdir lib/systemd/system)
set(_sysusersdir lib/sysusers.d)
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
	pkg_get_variable(_pc_unitdir systemd systemdsystemunitdir)
	pkg_get_variable(_pc_sysusersdir systemd sysusersdir)
	if(_pc_unitdir)
		set(_unitdir ${_pc_unitdir})
	endif()
	if(_pc_sysusersdir)
		set(_sysusersdir ${_pc_sysusersdir})
	endif()
endif()
set(RY_SYSTEMD_UNITDIR ${_unitdir} CACHE STRING
	"Where railyard.service is installed")
set(RY_SYSUSERSDIR ${_sysusersdir} CACHE STRING
	"Where the sysusers.d entry for the railyard user is installed")

# The config directory the unit reads is the one the config installs to.
set(RY_CONF_DIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/railyard)
configure_file(${PROJECT_SOURCE_DIR}/etc/railyard.service.in
	${PROJECT_BINARY_DIR}/railyard.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/railyard.service
	DESTINATION ${RY_SYSTEMD_UNITDIR} COMPONENT railyard)
install(FILES ${PROJECT_SOURCE_DIR}/etc/packaging/railyard.sysusers
	DESTINATION ${RY_SYSUSERSDIR} RENAME railyard.conf COMPONENT railyard)
if(IS_ABSOLUTE ${RY_SYSUSERSDIR})
	set(RY_SYSUSERSDIR_FULL ${RY_SYSUSERSDIR})
else()
	set(RY_SYSUSERSDIR_FULL ${CMAKE_INSTALL_PREFIX}/${RY_SYSUSERSDIR})
endif()

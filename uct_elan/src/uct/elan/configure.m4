#
# The Elan NIC transport (uct_elan/ of the Elan IOPROC project).  libelan,
# its user library, is compiled into the module from src/uct/elan/libelan,
# which uct_elan/build.sh copies in with the transport.
#

uct_elan_supported=no

AC_ARG_WITH([elan],
            [AS_HELP_STRING([--with-elan], [Build the Elan NIC transport])],
            [], [with_elan=guess])

AS_IF([test "x$with_elan" != "xno"],
      [AC_MSG_CHECKING([for the Elan transport sources])
       AS_IF([test -f "$srcdir/src/uct/elan/libelan/elan.c"],
             [AC_MSG_RESULT([yes])
              uct_modules="${uct_modules}:elan"
              uct_elan_supported=yes
              AC_DEFINE([HAVE_TL_ELAN], [1], [Defined if the Elan transport exists])],
             [AC_MSG_RESULT([no])
              AS_IF([test "x$with_elan" = "xyes"],
                    [AC_MSG_ERROR([Elan support was requested but src/uct/elan/libelan is missing])])])])

AM_CONDITIONAL([HAVE_ELAN], [test "x$uct_elan_supported" = xyes])
AC_CONFIG_FILES([src/uct/elan/Makefile])

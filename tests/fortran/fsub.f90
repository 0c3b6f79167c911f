! fsub.f90: Fortran subroutines served through Calls "Fortran" stubs (fsub.idl): the
! stub passes every argument by reference to the mangled name (fscale_), as a Fortran
! caller would. tests/fortran.sh builds them into a module with gridrpc-module.

!> x = alpha * x
subroutine fscale(n, x, alpha)
  implicit none
  integer, intent(in) :: n
  double precision, intent(inout) :: x(n)
  double precision, intent(in) :: alpha
  x = alpha * x
end subroutine fscale

!> y = a x for an m x n Fortran matrix (its IDL declares the dimensions reversed,
!> a[n][m], which is the same memory as a C array).
subroutine fmatvec(m, n, a, x, y)
  implicit none
  integer, intent(in) :: m, n
  double precision, intent(in) :: a(m, n), x(n)
  double precision, intent(out) :: y(m)
  y = matmul(a, x)
end subroutine fmatvec

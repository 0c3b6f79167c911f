! dmmul.f90: the Ninf example in Fortran: a matrix multiply moved to a server by
! changing one line, with Fortran arrays as they are.
!
!     c = matmul(a, b)                            ! local
!     call grid_call('linalg/dmmul', n, a, b, c)  ! remote
!
! The module matches a(i,j) with the IDL's A[i][j] (it transposes through C-order
! copies), so the remote result is c = matmul(a, b) exactly as the local one.
!
! Usage: dmmul N   (GRIDRPC_SERVER=host:port names the server)
program dmmul
  use gridrpc
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  real(dp), allocatable :: a(:, :), b(:, :), c(:, :), l(:, :)
  character(len=32) :: arg
  integer :: n, ios, ierr
  integer(8) :: t0, t1, rate
  real(dp) :: remote, local, maxdiff

  if (command_argument_count() /= 1) then
    write (0, '(a)') 'Usage: dmmul N'
    write (0, '(a)') 'Multiplies two N x N matrices on a GridRPC server and locally, and compares.'
    stop 2
  end if
  call get_command_argument(1, arg)
  read (arg, *, iostat=ios) n
  if (ios /= 0 .or. n < 1 .or. n > 20000) then
    write (0, '(3a)') "dmmul: N must be an integer from 1 to 20000, not '", trim(arg), "'"
    stop 2
  end if

  allocate (a(n, n), b(n, n), c(n, n), l(n, n))
  call random_number(a)
  call random_number(b)

  call system_clock(t0, rate)
  call grid_call('linalg/dmmul', n, a, b, c, ierr=ierr)
  call system_clock(t1)
  if (ierr /= GRID_OK) then
    write (0, '(2a)') 'dmmul: remote call failed: ', grid_last_error_f()
    error stop 1
  end if
  remote = real(t1 - t0, dp) / real(rate, dp)

  call system_clock(t0)
  l = matmul(a, b)
  call system_clock(t1)
  local = real(t1 - t0, dp) / real(rate, dp)

  maxdiff = maxval(abs(c - l))
  write (*, '(a,i0,a,f0.3,a,f0.3,a,es9.2,1x,a)') 'dmmul n=', n, ': remote ', remote, ' s, local matmul ', &
    local, ' s, max |diff| ', maxdiff, merge('OK      ', 'MISMATCH', maxdiff <= 1d-9 * n)
  if (maxdiff > 1d-9 * n) error stop 1
end program dmmul

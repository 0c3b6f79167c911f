! linpack.f90: the Ninf Linpack experiment in Fortran: solve a x = b on a server (LU
! factor and solve in one call, linalg/linpack) and check the residual as Linpack does.
!
!     call grid_call('linalg/linpack', n, a, x, info)   ! x: b in, the solution out
!
! a is an ordinary Fortran matrix: the module passes a(i,j) as the IDL's A[i][j], so the
! server solves exactly this system (and a comes back holding its LU factors).
!
! Usage: linpack N   (GRIDRPC_SERVER=host:port names the server)
program linpack
  use gridrpc
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  real(dp), allocatable :: a(:, :), lu(:, :), b(:), x(:)
  character(len=32) :: arg
  integer :: n, ios, info, ierr
  integer(8) :: t0, t1, rate
  real(dp) :: secs, resid

  if (command_argument_count() /= 1) then
    write (0, '(a)') 'Usage: linpack N'
    write (0, '(a)') 'Solves an N x N system on a GridRPC server and checks the residual.'
    stop 2
  end if
  call get_command_argument(1, arg)
  read (arg, *, iostat=ios) n
  if (ios /= 0 .or. n < 1 .or. n > 20000) then
    write (0, '(3a)') "linpack: N must be an integer from 1 to 20000, not '", trim(arg), "'"
    stop 2
  end if

  allocate (a(n, n), lu(n, n), b(n), x(n))
  call random_number(a)
  a = a - 0.5_dp
  call random_number(b)
  lu = a
  x = b

  call system_clock(t0, rate)
  call grid_call('linalg/linpack', n, lu, x, info, ierr=ierr)
  call system_clock(t1)
  if (ierr /= GRID_OK) then
    write (0, '(2a)') 'linpack: remote call failed: ', grid_last_error_f()
    error stop 1
  end if
  if (info /= 0) then
    write (0, '(a,i0)') 'linpack: the matrix is singular, info = ', info
    error stop 1
  end if
  secs = real(t1 - t0, dp) / real(rate, dp)

  ! Linpack's normalised residual ||a x - b|| / (n ||a|| ||x|| eps).
  resid = maxval(abs(matmul(a, x) - b)) / &
          (n * maxval(sum(abs(a), dim=2)) * maxval(abs(x)) * epsilon(1.0_dp))
  write (*, '(a,i0,a,f0.3,a,f0.1,a,es9.2,1x,a)') 'linpack n=', n, ': remote ', secs, ' s, ', &
    (2.0_dp * real(n, dp)**3 / 3 + 2.0_dp * real(n, dp)**2) / max(secs, 1d-9) / 1d6, ' Mflop/s, normalised residual ', resid, &
    merge('OK     ', 'TOO BIG', resid < 100)
  if (resid >= 100) error stop 1
end program linpack

complete -c wgnn-superres -s o -l output -d 'Output: an image (.png, .jpg) for an image input; .mp4 or .mkv for a video (H.264 High profile, 4:2:0). Default: INPUT\'s name with _x<scale> (.png or .mp4) in the current folder. A symbolic link is written through (the file it leads to is replaced); a device or a FIFO is refused' -r -F
complete -c wgnn-superres -l scale -d 'Upscaling factor' -r
complete -c wgnn-superres -l model -d 'Another super-resolution model (TF.js model.json or TFLite)' -r -F
complete -c wgnn-superres -l device -d 'Where the model runs: auto is a hardware GPU, else the CPU (also where the only GPU is a software one; --device gpu uses it anyway)' -r -f -a "auto\t'A hardware GPU; the CPU when there is none or only a software one'
gpu\t'The GPU, even a software rasteriser (lavapipe); fail without one'
cpu\t'The CPU context: system memory only'"
complete -c wgnn-superres -l precision -d 'What the model computes in: auto is float16 where the GPU has SHADER_F16 and the picture stays within 1% (RMS, 40 dB) of float32\'s on a probe input, else float32' -r -f -a "auto\t''
f32\t''
f16\t''"
complete -c wgnn-superres -l frames -d 'Stop a video after N frames (1 or more)' -r
complete -c wgnn-superres -l generate -d 'Print the manual page (man) or a shell completion script (bash, zsh, fish) and exit' -r -f -a "man\t'The manual page (roff, for man(1))'
bash\t'A bash completion script'
zsh\t'A zsh completion script'
fish\t'A fish completion script'"
complete -c wgnn-superres -l overwrite -d 'Replace the default output (without -o) when it exists'
complete -c wgnn-superres -l compare -d 'Side by side: bicubic on the left, the model on the right'
complete -c wgnn-superres -l eval -d 'Evaluate on an image: downscale it by --scale, upscale it back with bicubic and with the model, and print PSNR/SSIM of both against the original (luma, border of --scale pixels left out)'
complete -c wgnn-superres -s q -l quiet -d 'No progress bar or summary'
complete -c wgnn-superres -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wgnn-superres -s V -l version -d 'Print version'
